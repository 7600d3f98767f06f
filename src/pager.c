/* wbtunectl's pager: a child that reads our standard output, started only on a terminal. */
#include "pager.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

static pid_t pager_pid;

bool pager_active(void) {
        return pager_pid > 0;
}

/* The child: run the pager on the pipe; if none can be run, copy the text through so nothing is lost. */
static _Noreturn void pager_child(const char *pager) {
        const char *less = getenv("SYSTEMD_LESS");
        char buf[4096];
        ssize_t n;

        (void) setenv("LESS", less ? less : "FRSXMK", 1);
        if (pager)
                execl("/bin/sh", "sh", "-c", pager, (char *) NULL);
        else {
                execlp("less", "less", (char *) NULL);
                execlp("more", "more", (char *) NULL);
        }
        while ((n = read(STDIN_FILENO, buf, sizeof buf)) > 0)
                if (write(STDOUT_FILENO, buf, (size_t) n) != n)
                        break;
        _exit(EXIT_SUCCESS);
}

int pager_open(void) {
        const char *pager = getenv("SYSTEMD_PAGER");
        struct sigaction ignore = { .sa_handler = SIG_IGN };
        int fds[2];
        pid_t pid;

        if (pager_pid > 0 || !isatty(STDOUT_FILENO))
                return 0;
        if (!pager)
                pager = getenv("PAGER");
        /* as systemd: an empty variable or "cat" means no pager */
        if (pager && (!*pager || strcmp(pager, "cat") == 0))
                return 0;
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
                pager_child(pager);
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
