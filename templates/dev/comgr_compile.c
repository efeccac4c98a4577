/* comgr_compile.c - dev helper for check.sh: compile one generated .hip for
 * gfx90a through comgr 2.4 (LLVM 15), the way gen/ does it.
 * Usage: comgr_compile gfx90a IN.hip OUT.hsaco       Build: cc comgr_compile.c -lamd_comgr */
#include <amd_comgr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                           \
    do {                                                                      \
        amd_comgr_status_t st_ = (call);                                      \
        if (st_ != AMD_COMGR_STATUS_SUCCESS) {                                \
            fprintf(stderr, "comgr_compile: %s failed (%d)\n", #call, st_);   \
            print_log(out);                                                   \
            return 1;                                                         \
        }                                                                     \
    } while (0)

static void print_log(amd_comgr_data_set_t set)
{
    size_t n = 0;
    amd_comgr_data_t log;
    if (amd_comgr_action_data_count(set, AMD_COMGR_DATA_KIND_LOG, &n) || n == 0)
        return;
    if (amd_comgr_action_data_get_data(set, AMD_COMGR_DATA_KIND_LOG, 0, &log))
        return;
    size_t size = 0;
    amd_comgr_get_data(log, &size, NULL);
    char *text = malloc(size + 1);
    amd_comgr_get_data(log, &size, text);
    text[size] = 0;
    fputs(text, stderr);
    free(text);
}

static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(*size);
    if (fread(buf, 1, *size, f) != *size) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: comgr_compile gfx90a IN.hip OUT.hsaco\n");
        return 2;
    }
    size_t size;
    char *src = read_file(argv[2], &size);
    if (!src) {
        perror(argv[2]);
        return 1;
    }
    char isa[64];
    snprintf(isa, sizeof isa, "amdgcn-amd-amdhsa--%s", argv[1]);
    const char *opts[] = {"-O3", "-nogpuinc", "-std=c++17"};

    amd_comgr_data_set_t in, bc, reloc, out = {0};
    amd_comgr_data_t data;
    amd_comgr_action_info_t info;
    CHECK(amd_comgr_create_data_set(&in));
    CHECK(amd_comgr_create_data_set(&bc));
    CHECK(amd_comgr_create_data_set(&reloc));
    CHECK(amd_comgr_create_data_set(&out));
    CHECK(amd_comgr_create_data(AMD_COMGR_DATA_KIND_SOURCE, &data));
    CHECK(amd_comgr_set_data(data, size, src));
    CHECK(amd_comgr_set_data_name(data, "kernel.hip"));
    CHECK(amd_comgr_data_set_add(in, data));
    CHECK(amd_comgr_create_action_info(&info));
    CHECK(amd_comgr_action_info_set_language(info, AMD_COMGR_LANGUAGE_HIP));
    CHECK(amd_comgr_action_info_set_isa_name(info, isa));
    CHECK(amd_comgr_action_info_set_option_list(info, opts, 3));
    CHECK(amd_comgr_action_info_set_logging(info, 1));
    CHECK(amd_comgr_do_action(AMD_COMGR_ACTION_COMPILE_SOURCE_WITH_DEVICE_LIBS_TO_BC, info, in, bc));
    print_log(bc);
    CHECK(amd_comgr_do_action(AMD_COMGR_ACTION_CODEGEN_BC_TO_RELOCATABLE, info, bc, reloc));
    CHECK(amd_comgr_do_action(AMD_COMGR_ACTION_LINK_RELOCATABLE_TO_EXECUTABLE, info, reloc, out));

    amd_comgr_data_t exe;
    CHECK(amd_comgr_action_data_get_data(out, AMD_COMGR_DATA_KIND_EXECUTABLE, 0, &exe));
    size_t n = 0;
    CHECK(amd_comgr_get_data(exe, &n, NULL));
    char *buf = malloc(n);
    CHECK(amd_comgr_get_data(exe, &n, buf));
    FILE *f = fopen(argv[3], "wb");
    if (!f || fwrite(buf, 1, n, f) != n) {
        perror(argv[3]);
        return 1;
    }
    fclose(f);
    return 0;
}
