/* wbtunectl's pager, as systemctl has it: long output on a terminal goes through less. */
#pragma once

#include <stdbool.h>

/* When standard output is a terminal, start a pager and make standard output its pipe: $SYSTEMD_PAGER,
 * else $PAGER (run by /bin/sh), else less, else more; none when the variable is empty or "cat". The pager
 * gets LESS=$SYSTEMD_LESS or "FRSXMK" (quit at the end of a short text, keep colours, no screen clearing).
 * 0 (also when no pager is started) or -errno. Idempotent. */
int pager_open(void);
/* Flush standard output, let the pager see the end of the text and wait for it to exit. Idempotent. */
void pager_close(void);
/* A pager reads standard output now. */
bool pager_active(void);
