/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbtunectl's pager: a child that reads our standard output, started only on a terminal. */
#include "pager.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include "escape.h"
#include "util.h"

static pid_t pager_pid;

bool pager_active(void) {
        return pager_pid > 0;
}

pager_choice pager_decide(const pager_env *env) {
        const char *pager = env->systemd_pager ? env->systemd_pager : env->pager;
        pager_choice c = { .page = true };
        int secure = env->pager_secure ? parse_boolean(env->pager_secure) : -ENXIO;
        bool trusted = secure >= 0;

        /* as systemd: an empty variable or "cat" means no pager, which is safe in any mode */
        if (pager && (!*pager || strcmp(pager, "cat") == 0))
                return (pager_choice) { .page = false };
        if (secure == -ENXIO)
                secure = (env->sudo_uid && *env->sudo_uid) || (env->pkexec_uid && *env->pkexec_uid) ||
                         env->euid != env->uid || env->at_secure;
        else if (secure < 0) {
                c.bad_pager_secure = true;
                secure = true;
        }
        c.secure = secure;
        /* a pager we do not know to have a secure mode runs only when the user said which mode they want */
        if (pager && (trusted || !c.secure))
                c.command = pager;
        return c;
}

/* The child: run the pager on the pipe; if none can be run, copy the text through so nothing is lost. */
static _Noreturn void pager_child(const pager_choice *c) {
        const char *less = secure_getenv("SYSTEMD_LESS");
        char buf[4096];
        ssize_t n;

        (void) setenv("LESS", less ? less : "FRSXMK", 1);
        if (c->secure && setenv("LESSSECURE", "1", 1) < 0)
                _exit(EXIT_FAILURE);
        if (c->command)
                execl("/bin/sh", "sh", "-c", c->command, (char *) NULL);
        else {
                execlp("less", "less", (char *) NULL);
                /* more has no secure mode: its ! runs a shell */
                if (!c->secure)
                        execlp("more", "more", (char *) NULL);
        }
        while ((n = read(STDIN_FILENO, buf, sizeof buf)) > 0)
                if (write(STDOUT_FILENO, buf, (size_t) n) != n)
                        break;
        _exit(EXIT_SUCCESS);
}

int pager_open(void) {
        struct sigaction ignore = { .sa_handler = SIG_IGN };
        pager_choice c;
        pager_env env;
        int fds[2];
        pid_t pid;

        if (pager_pid > 0 || !isatty(STDOUT_FILENO))
                return 0;
        env = (pager_env) {
                .systemd_pager = secure_getenv("SYSTEMD_PAGER"),
                .pager = secure_getenv("PAGER"),
                .pager_secure = secure_getenv("SYSTEMD_PAGERSECURE"),
                .sudo_uid = secure_getenv("SUDO_UID"),
                .pkexec_uid = secure_getenv("PKEXEC_UID"),
                .uid = getuid(),
                .euid = geteuid(),
                .at_secure = getauxval(AT_SECURE) != 0,
        };
        c = pager_decide(&env);
        if (!c.page)
                return 0;
        if (c.bad_pager_secure) {
                _cleanup_free_ char *value = escape_text_alloc(env.pager_secure);
                fprintf(stderr, "wbtunectl: SYSTEMD_PAGERSECURE=%s is not a boolean: the pager runs in secure mode\n",
                        value);
        }
        if (fflush(stdout) != 0)
                return -errno;
        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(fds[0]);
                close(fds[1]);
                return r;
        }
        if (pid == 0) {
                if (dup2(fds[0], STDIN_FILENO) < 0)
                        _exit(EXIT_FAILURE);
                close(fds[0]);
                close(fds[1]);
                pager_child(&c);
        }
        if (dup2(fds[1], STDOUT_FILENO) < 0) {
                int r = -errno;
                close(fds[0]);
                close(fds[1]);
                (void) waitpid(pid, NULL, 0);
                return r;
        }
        close(fds[0]);
        close(fds[1]);
        pager_pid = pid;
        /* The pager handles Ctrl-C (less stops a search); quitting it early must not kill us with SIGPIPE
         * either: writes then fail with EPIPE, which the caller does not count as an error. */
        (void) sigaction(SIGINT, &ignore, NULL);
        (void) sigaction(SIGPIPE, &ignore, NULL);
        return 0;
}

void pager_close(void) {
        if (pager_pid <= 0)
                return;
        _cleanup_close_ int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

        (void) fflush(stdout);
        /* the pager's end of text: our end of the pipe closes, standard output stays a valid fd */
        if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
                (void) close(STDOUT_FILENO);
        while (waitpid(pager_pid, NULL, 0) < 0 && errno == EINTR)
                ;
        pager_pid = 0;
}
