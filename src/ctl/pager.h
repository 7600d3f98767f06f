/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbtunectl's pager, as systemctl has it: long output on a terminal goes through less. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* What the pager decision reads: the environment (NULL: unset) and who we run as. */
typedef struct pager_env {
        const char *systemd_pager, *pager; /* $SYSTEMD_PAGER, $PAGER */
        const char *pager_secure;          /* $SYSTEMD_PAGERSECURE */
        const char *sudo_uid, *pkexec_uid; /* $SUDO_UID, $PKEXEC_UID: run for another user by sudo/pkexec */
        uid_t uid, euid;
        bool at_secure;                    /* getauxval(AT_SECURE): setuid, setgid or file capabilities */
} pager_env;

typedef struct pager_choice {
        bool page;            /* false: no pager at all ($PAGER or $SYSTEMD_PAGER empty or "cat") */
        const char *command;  /* the user's pager, run by /bin/sh; NULL: less, then (not secure) more */
        bool secure;          /* LESSSECURE=1: less refuses !cmd, |cmd, v (editor), :e and log files */
        bool bad_pager_secure; /* $SYSTEMD_PAGERSECURE is not a boolean: secure, and worth a warning */
} pager_choice;

/* systemd's rule (its pager.c): $SYSTEMD_PAGERSECURE, a boolean, says whether the pager runs in secure mode
 * and that the user's pager is trusted either way. Unset, secure mode is on when we run for someone else
 * ($SUDO_UID, $PKEXEC_UID, euid != uid, AT_SECURE) and then only less runs: $SYSTEMD_PAGER and $PAGER are
 * ignored, except that an empty one or "cat" still turns the pager off. Pure. */
pager_choice pager_decide(const pager_env *env);

/* When standard output is a terminal, start the pager pager_decide() chooses from the environment (read with
 * secure_getenv()) and make standard output its pipe. The pager gets LESS=$SYSTEMD_LESS or "FRSXMK" (quit at
 * the end of a short text, keep colours, no screen clearing) and, in secure mode, LESSSECURE=1.
 * 0 (also when no pager is started) or -errno. Idempotent. */
int pager_open(void);
/* Flush standard output, let the pager see the end of the text and wait for it to exit. Idempotent. */
void pager_close(void);
/* A pager reads standard output now. */
bool pager_active(void);
