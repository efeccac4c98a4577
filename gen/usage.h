/* usage.h: hkgen's help texts and manual page, from one table (usage.c). */
#ifndef HK_USAGE_H
#define HK_USAGE_H

#include <stdio.h>

/* Whether name is an hkgen command. */
int us_is_command(const char *name);
/* Every command's synopsis and summary, the common exit statuses, the environment. */
void us_overview(FILE *f);
/* One command's synopsis, description, options and exit statuses; -1 if unknown. */
int us_command(FILE *f, const char *name);
/* The manual page (roff, man(7)). */
void us_man(FILE *f, const char *version);

#endif
