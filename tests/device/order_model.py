#!/usr/bin/env python3
"""List-scheduling model of the causal block order (templates/attn_fwd.sm90.hip.m4,
attn_block_order): 132 multiprocessors, one block each at a time, a block
taking the next one in launch order when one finishes; a tile of i + 1 K/V
blocks costs i + 1 + OV.  Prints the makespan over the lower bound
(total / 132) for the old order (head by head, longest tile first), the
grouped order (G heads per group, longest tiles of the group first) and a
global longest-first order.  No GPU: python3 tests/device/order_model.py"""
import heapq


def makespan(costs, units=132):
    free = [0.0] * units
    for c in costs:
        heapq.heappush(free, heapq.heappop(free) + c)
    return max(free)


def orders(S, B, H, ov, G):
    T = S // 128
    cost = lambda x: (T - x) + ov            # x = 0: the longest tile
    old = [cost(x) for _ in range(B * H) for x in range(T)]
    grouped = [cost(x) for g0 in range(0, B * H, G) for x in range(T) for _ in range(g0, min(B * H, g0 + G))]
    return sum(old) / 132, makespan(old), makespan(grouped), makespan(sorted(old, reverse=True))


for S, B in ((2048, 8), (8192, 2)):
    for ov in (0.5, 1.5, 3):
        for G in (4, 8, 16, 32):
            lb, a, b, c = orders(S, B, 16, ov, G)
            print("keys %5d overhead %.1f heads/group %2d: old %.3f grouped %.3f global %.3f" % (S, ov, G, a / lb, b / lb, c / lb))
