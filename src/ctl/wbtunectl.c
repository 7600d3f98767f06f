/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbtunectl: query and command wbtuned over its control socket. */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "control-client.h"
#include "ctl-format.h"
#include "ctl-plot.h"
#include "ctl-table.h"
#include "ctl-wait.h"
#include "escape.h"
#include "pager.h"
#include "metrics-print.h"
#include "protocol.h"
#include "util.h"

/* Exit codes, documented in --help and wbtunectl(8). */
enum {
        EXIT_DAEMON_ERROR = 1,   /* the daemon answered with an error */
        EXIT_USAGE = 2,
        EXIT_UNREACHABLE = 3,    /* no daemon, no answer, or a garbled one */
        EXIT_PERMISSION = 4,     /* the daemon answered EPERM */
        EXIT_TIMEOUT = 5,        /* wait: the device still held data when --timeout passed */
};

enum { ARG_SOCKET = 0x100, ARG_JSON, ARG_TIMEOUT, ARG_VERSION, ARG_ONCE, ARG_CSV, ARG_NO_PAGER, ARG_NO_LEGEND,
       ARG_LIST };

/* --json=MODE, as systemctl has it */
typedef enum json_mode { JSON_OFF, JSON_PRETTY, JSON_SHORT } json_mode;

#define REPLY_TIMEOUT_MS_DEFAULT 5000

static void json_object_putp(json_object **o) {
        json_object_put(*o);
}

static const char *arg_socket = PROTOCOL_DEFAULT_SOCKET;
static json_mode arg_json = JSON_OFF;
static int arg_timeout_ms = REPLY_TIMEOUT_MS_DEFAULT;   /* for each reply; wait: see arg_wait_timeout_ms */
static bool arg_timeout_set;
static uint64_t arg_wait_timeout_ms;                    /* wait: how long at most; 0 = until clean */
static bool arg_once, arg_csv;
static bool arg_pager = true, arg_legend = true;
static const char *arg_output, *arg_list;
static bool use_pager;                                  /* the verb's output may go through the pager */

static int call_request(const char *verb, json_object *request, protocol_kind kind, json_object **ret_result);

/* The result kind the reply to verb is checked against: none in --json mode (it is printed as it
 * comes; only its envelope is checked), else the verb's. */
static protocol_kind result_kind(const char *verb, bool csv) {
        return arg_json != JSON_OFF ? PK_NONE : protocol_result_kind(verb, csv);
}

/* Send {"verb":verb, ...extra} and hand back the "result", or print why not and return an exit code. */
static int call(const char *verb, const char *arg_key, const char *arg_value, json_object **ret_result) {
        json_object *request = oom_check(json_object_new_object());

        if (arg_key)
                oom_check_add(json_object_object_add(request, arg_key, oom_check(json_object_new_string(arg_value))));
        return call_request(verb, request, result_kind(verb, false), ret_result);
}

/* Takes request (arguments only; "verb" is added). The reply is checked against the protocol: a
 * missing field or one of the wrong type is an error naming it, never a 0 read in its place. */
static int call_request(const char *verb, json_object *request, protocol_kind kind, json_object **ret_result) {
        json_object *reply = NULL, *result = NULL;
        char error[512];
        int r;

        proto_add_string(request, PF_REQUEST_VERB, verb);
        r = control_call(arg_socket, request, &reply, arg_timeout_ms);
        json_object_put(request);

        if (r < 0) {
                errno = -r;
                if (r == -ENOENT)
                        fprintf(stderr, "wbtunectl: wbtuned is not running (no socket at %s: %m)\n", arg_socket);
                else if (r == -ECONNREFUSED)
                        fprintf(stderr, "wbtunectl: wbtuned is not running (nobody listens on %s: %m)\n", arg_socket);
                else if (r == -ETIMEDOUT)
                        fprintf(stderr, "wbtunectl: wbtuned sent nothing for %d ms on %s\n", arg_timeout_ms, arg_socket);
                else if (r == -ECONNRESET)
                        fprintf(stderr, "wbtunectl: wbtuned closed the connection on %s without answering %s "
                                "(it stopped, or refused or dropped this client: its log says why)\n", arg_socket, verb);
                else if (r == -EPIPE)
                        fprintf(stderr, "wbtunectl: wbtuned closed the connection on %s in the middle of its reply to %s "
                                "(it stopped, or dropped this client: its log says why)\n", arg_socket, verb);
                else if (r == -EFBIG)
                        fprintf(stderr, "wbtunectl: wbtuned's reply to %s on %s is longer than %zu MiB, more than "
                                "wbtunectl takes\n", verb, arg_socket, CONTROL_REPLY_MAX >> 20);
                else if (r == -EBADMSG)
                        fprintf(stderr, "wbtunectl: wbtuned sent a reply to %s that is not a JSON object on %s\n", verb,
                                arg_socket);
                else
                        fprintf(stderr, "wbtunectl: cannot talk to wbtuned on %s: %m\n", arg_socket);
                return EXIT_UNREACHABLE;
        }

        r = ctl_check_reply(reply, kind, &result, error, sizeof error);
        if (r < 0) {
                _cleanup_free_ char *why = escape_text_alloc(error);
                fprintf(stderr, "wbtunectl: wbtuned's reply to %s is not what this wbtunectl reads: %s\n", verb, why);
                json_object_put(reply);
                return EXIT_UNREACHABLE;
        }
        if (r > 0) {
                const char *message = proto_str(reply, PF_REPLY_ERROR), *name = proto_str(reply, PF_REPLY_ERRNO);

                if (strchr(message, '\n')) {
                        /* Several lines (config errors "FILE:LINE: ..."): one per line, each escaped. */
                        fprintf(stderr, "wbtunectl: %s failed:\n", verb);
                        (void) escape_lines_fputs(message, stderr);
                        fputc('\n', stderr);
                } else {
                        _cleanup_free_ char *why = escape_text_alloc(*message ? message : "failed without a reason");
                        fprintf(stderr, "wbtunectl: %s: %s\n", verb, why);
                }
                r = strcmp(name, "EPERM") == 0 ? EXIT_PERMISSION : EXIT_DAEMON_ERROR;
                json_object_put(reply);
                return r;
        }
        *ret_result = json_object_get(result);
        json_object_put(reply);
        return 0;
}

/* Write text to standard output, through the pager when the verb has one: 0 or EXIT_DAEMON_ERROR. A pager
 * the user quit before the end (EPIPE) is no error. */
static int output(const char *text, size_t size) {
        if (use_pager && arg_pager) {
                int r = pager_open();
                if (r < 0) {
                        errno = -r;
                        fprintf(stderr, "wbtunectl: cannot start a pager (try --no-pager): %m\n");
                }
        }
        if ((size > 0 && fwrite(text, 1, size, stdout) != size) || fflush(stdout) != 0)
                return pager_active() && errno == EPIPE ? 0 : EXIT_DAEMON_ERROR;
        return 0;
}

/* An object in the --json mode: indented (pretty) or on one line (short), with DEL, C1 controls and format
 * characters in its strings as \u escapes (escape_json_alloc()): no terminal acts on them. Malloc'd. */
static char *json_text(json_object *o) {
        int flags = JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE;

        if (arg_json == JSON_SHORT)
                flags = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;
        else if (json_object_is_type(o, json_type_object) && json_object_object_length(o) == 0)
                return xstrdup("{}");
        return escape_json_alloc(oom_check(json_object_to_json_string_ext(o, flags)));
}

static int print_json(json_object *o) {
        _cleanup_free_ char *json = json_text(o), *text = NULL;

        if (asprintf(&text, "%s\n", json) < 0) {
                fprintf(stderr, "wbtunectl: out of memory\n");
                return EXIT_DAEMON_ERROR;
        }
        return output(text, strlen(text));
}

/* Render with a formatter into memory, then print: a reply that cannot be shown prints nothing but why. */
static int render(const char *verb, int (*format)(json_object *, FILE *), json_object *o) {
        _cleanup_memstream_ memstream ms = {};
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r;

        if (!memstream_open(&ms)) {
                fprintf(stderr, "wbtunectl: out of memory\n");
                return EXIT_DAEMON_ERROR;
        }
        r = format(o, ms.f);
        if (r >= 0)
                r = memstream_finish(&ms, &text, &size);
        if (r < 0) {
                errno = -r;
                fprintf(stderr, "wbtunectl: cannot show wbtuned's reply to %s: %m\n", verb);
                return EXIT_DAEMON_ERROR;
        }
        return output(text, size);
}

static int verb_status(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call(PROTOCOL_VERB_STATUS, NULL, NULL, &result);
        if (r != 0)
                return r;
        return arg_json != JSON_OFF ? print_json(result) : render(PROTOCOL_VERB_STATUS, ctl_format_status, result);
}

static int verb_devices(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call(PROTOCOL_VERB_DEVICES, NULL, NULL, &result);
        if (r != 0)
                return r;
        return arg_json != JSON_OFF ? print_json(result) : render(PROTOCOL_VERB_DEVICES, ctl_format_devices, result);
}

static int verb_show(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call(PROTOCOL_VERB_SHOW, protocol_name(PF_REQUEST_DEVICE), args[0], &result);
        if (r != 0)
                return r;
        return arg_json != JSON_OFF ? print_json(result) : render(PROTOCOL_VERB_SHOW, ctl_format_show, result);
}

static int verb_reload(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call(PROTOCOL_VERB_RELOAD, NULL, NULL, &result);
        if (r != 0)
                return r;
        return arg_json != JSON_OFF ? print_json(result) : 0;
}

static int verb_explain(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call(PROTOCOL_VERB_EXPLAIN, protocol_name(PF_REQUEST_DEVICE), args[0], &result);
        if (r != 0)
                return r;
        return arg_json != JSON_OFF ? print_json(result) : render(PROTOCOL_VERB_EXPLAIN, ctl_format_explain, result);
}

static int verb_restore(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call(PROTOCOL_VERB_RESTORE, NULL, NULL, &result);
        if (r != 0)
                return r;
        if (arg_json != JSON_OFF)
                return print_json(result);
        printf("Every knob is back at its original value; wbtuned now only observes (until reload).\n");
        return 0;
}

static int usage_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

static int ctl_format_top_all(json_object *o, FILE *f) {
        return ctl_format_top(o, 0, f);
}

/* Fit a terminal: at most 10 tasks per list. */
static int ctl_format_top_screen(json_object *o, FILE *f) {
        return ctl_format_top(o, 10, f);
}

static volatile sig_atomic_t top_stop;

static void on_top_signal(int sig) {
        top_stop = 1;
}

/* Poll "top" every tick; --once prints one view; --json prints the result objects. */
static int verb_top(char **args) {
        bool tty = isatty(STDOUT_FILENO);
        struct sigaction sa = { .sa_handler = on_top_signal };

        if (!arg_once) {
                sigaction(SIGINT, &sa, NULL);
                sigaction(SIGTERM, &sa, NULL);
        }
        while (!top_stop) {
                _cleanup_(json_object_putp) json_object *result = NULL;
                int r = call(PROTOCOL_VERB_TOP, NULL, NULL, &result);
                uint64_t tick_ms;

                if (r != 0)
                        return r;
                if (arg_json != JSON_OFF) {
                        _cleanup_free_ char *json = json_text(result);
                        printf("%s\n", json);
                } else {
                        if (tty && !arg_once)
                                fputs("\033[H\033[2J", stdout);   /* home, clear screen */
                        r = render(PROTOCOL_VERB_TOP, arg_once || !tty ? ctl_format_top_all : ctl_format_top_screen, result);
                        if (r != 0)
                                return r;
                }
                if (fflush(stdout) != 0)
                        return EXIT_DAEMON_ERROR;
                if (arg_once)
                        break;
                /* between 100 ms and a minute, whatever the reply says */
                tick_ms = MIN(MAX(proto_u64(result, PF_TOP_TICK_MS), (uint64_t) 100), (uint64_t) 60000);
                struct timespec ts = { .tv_sec = (time_t) (tick_ms / 1000), .tv_nsec = (long) (tick_ms % 1000) * 1000000 };
                (void) nanosleep(&ts, NULL);   /* a signal ends the wait and the loop */
        }
        return 0;
}

/* {"verb": "history", "device": DEV (optional), "format": "json" or "csv"} */
static json_object *history_request(const char *device, bool csv) {
        json_object *request = oom_check(json_object_new_object());

        if (device)
                proto_add_string(request, PF_REQUEST_DEVICE, device);
        proto_add_string(request, PF_REQUEST_FORMAT, csv ? PROTOCOL_FORMAT_CSV : PROTOCOL_FORMAT_JSON);
        return request;
}

/* History of the whole machine, or of one device: CSV with --csv, JSON otherwise. */
static int verb_history(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r;

        r = call_request(PROTOCOL_VERB_HISTORY, history_request(args[0], arg_csv),
                         arg_csv ? protocol_result_kind(PROTOCOL_VERB_HISTORY, true) : result_kind(PROTOCOL_VERB_HISTORY, false),
                         &result);
        if (r != 0)
                return r;
        if (arg_csv)
                return render(PROTOCOL_VERB_HISTORY, ctl_format_history_csv, result);
        return print_json(result);
}

static int format_metrics(json_object *o, FILE *f) {
        return metrics_print_result(o, false, f);
}

/* On a terminal, names from users are escaped as in every other output. */
static int format_metrics_terminal(json_object *o, FILE *f) {
        return metrics_print_result(o, true, f);
}

/* The Prometheus text exposition, exact into a pipe or a file (promtool, a textfile collector). */
static int verb_metrics(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call(PROTOCOL_VERB_METRICS, NULL, NULL, &result);
        if (r != 0)
                return r;
        if (arg_json)
                return print_json(result);
        return render(PROTOCOL_VERB_METRICS, isatty(STDOUT_FILENO) ? format_metrics_terminal : format_metrics, result);
}

static bool in_path(const char *prog) {
        const char *path = getenv("PATH");
        _cleanup_free_ char *copy = xstrdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");

        for (char *dir = strtok(copy, ":"); dir; dir = strtok(NULL, ":")) {
                _cleanup_free_ char *p = NULL;

                if (asprintf(&p, "%s/%s", dir, prog) >= 0 && access(p, X_OK) == 0)
                        return true;
        }
        return false;
}

/* gnuplot's script for plot: constant. The output file (ctl_plot_output(): never "|command"), the data file
 * and the title come in as ARG1, ARG2 and ARG3 (gnuplot -c), string variables gnuplot never reads as code,
 * so quotes and newlines in them are data. */
static const char plot_script[] =
        "set terminal pngcairo size 1100,600 noenhanced\n"
        "set output ARG1\n"
        "set title 'wbtuned history: '.ARG3\n"
        "set xlabel 'seconds'\nset ylabel 'MiB'\nset key outside bottom center horizontal\n"
        "set grid\nset yrange [0:*]\n"
        "if (ARG4 eq 'device') {\n"
        "        set y2label 'MiB/s'\n        set y2tics\n        set ytics nomirror\n        set y2range [0:*]\n"
        "        plot ARG2 using 1:2 with lines lw 2 title 'dirty', "
        "'' using 1:3 with lines lw 2 title 'writeback', "
        "'' using 1:4 with lines lw 2 title 'threshold', "
        "'' using 1:5 axes x1y2 with lines lw 2 dt 2 title 'bandwidth (MiB/s)', "
        "'' using 1:6 with lines lw 1 title 'global dirty'\n"
        "} else {\n"
        "        plot ARG2 using 1:2 with lines lw 2 title 'dirty', "
        "'' using 1:3 with lines lw 2 title 'writeback', "
        "'' using 1:4 with lines lw 2 title 'threshold', "
        "'' using 1:5 with lines lw 1 title 'background threshold'\n"
        "}\n";

/* Dirty, writeback, threshold and bandwidth over time into a PNG, with gnuplot. */
static int verb_plot(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        char data_path[] = "/tmp/wbtunectl-plot-XXXXXX", script_path[] = "/tmp/wbtunectl-plot-XXXXXX";
        _cleanup_fclose_ FILE *data = NULL, *script = NULL;
        _cleanup_free_ char *title = NULL, *output = NULL;
        const char *bad_output = NULL;
        char error[256] = "";
        uint64_t rows = 0;
        int r, fd, status;
        pid_t pid;

        if (!arg_output)
                return usage_error("plot needs -o FILE.png");
        if (ctl_plot_output(arg_output, &output, &bad_output) < 0) {
                _cleanup_free_ char *name = escape_text_alloc(arg_output);
                return usage_error("plot -o \"%s\": %s", name, bad_output);
        }
        if (!in_path("gnuplot")) {
                fprintf(stderr, "wbtunectl: gnuplot is not installed (apt-get install gnuplot-nox)\n");
                return EXIT_DAEMON_ERROR;
        }
        r = call_request(PROTOCOL_VERB_HISTORY, history_request(args[0], true),
                         protocol_result_kind(PROTOCOL_VERB_HISTORY, true), &result);
        if (r != 0)
                return r;
        /* the title only: escaped, so a BDI name cannot put control characters into the picture */
        title = escape_text_alloc(proto_has(result, PF_HISTORY_CSV_BDI) ? proto_str(result, PF_HISTORY_CSV_BDI) : "global");

        fd = mkstemp(data_path);
        if (fd < 0 || !(data = fdopen(fd, "w"))) {
                fprintf(stderr, "wbtunectl: cannot create a temporary file: %m\n");
                return EXIT_DAEMON_ERROR;
        }
        fd = mkstemp(script_path);
        if (fd < 0 || !(script = fdopen(fd, "w"))) {
                fprintf(stderr, "wbtunectl: cannot create a temporary file: %m\n");
                unlink(data_path);
                return EXIT_DAEMON_ERROR;
        }
        r = ctl_plot_data(proto_str(result, PF_HISTORY_CSV_CSV), args[0] != NULL, data, &rows, error, sizeof error);
        if (r >= 0 && (fputs(plot_script, script) < 0 || fflush(script) != 0))
                r = -EIO;
        if (r < 0 || rows == 0) {
                _cleanup_free_ char *why = escape_text_alloc(error);
                fprintf(stderr, "wbtunectl: %s\n", r == -EBADMSG ? why : r < 0 ? "cannot write the plot files" :
                                                   "no history to plot yet");
                unlink(data_path);
                unlink(script_path);
                return EXIT_DAEMON_ERROR;
        }

        fflush(stdout);
        pid = fork();
        if (pid == 0) {
                execlp("gnuplot", "gnuplot", "-c", script_path, output, data_path, title,
                       args[0] ? "device" : "global", (char *) NULL);
                _exit(127);
        }
        status = -1;
        if (pid > 0)
                while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                        ;
        unlink(data_path);
        unlink(script_path);
        if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                _cleanup_free_ char *out = escape_text_alloc(arg_output);
                fprintf(stderr, "wbtunectl: gnuplot failed to draw %s\n", out);
                return EXIT_DAEMON_ERROR;
        }
        _cleanup_free_ char *out = escape_text_alloc(arg_output);
        printf("Wrote %s: %" PRIu64 " samples of %s.\n", out, rows, title);
        return 0;
}

/* --- wait: is the device safe to unplug? ------------------------------------------------------- */

#define WAIT_MOUNTS_MAX 64

/* ctl_counter_error_bytes() for this machine. sysconf's count of configured CPUs stands in for
 * nr_cpu_ids only where /sys does not say (it is the same on every kernel that has both). */
static uint64_t wait_counter_error_bytes(void) {
        char line[256];
        unsigned cpus = 0;
        long page = sysconf(_SC_PAGESIZE), conf = sysconf(_SC_NPROCESSORS_CONF);

        if (read_one_line("/sys/devices/system/cpu/possible", line, sizeof line) < 0 ||
            ctl_parse_possible_cpus(line, &cpus) < 0)
                cpus = conf > 0 ? (unsigned) conf : 1;
        return ctl_counter_error_bytes(cpus, page > 0 ? (uint64_t) page : 4096);
}

/* A mount point, opened for syncfs(): through an O_PATH fd first, so that only a directory or a regular
 * file is ever opened for reading (never a device node or a FIFO mounted there). The fd, or -errno. */
static int open_for_syncfs(const char *path) {
        _cleanup_close_ int path_fd = open(path, O_PATH | O_CLOEXEC);
        char proc[64];
        struct stat st;
        int fd;

        if (path_fd < 0)
                return -errno;
        if (fstat(path_fd, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                return -EINVAL;
        /* opening it again through /proc checks the caller's permission on it, as open(path) would */
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", path_fd);
        fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
        return fd < 0 ? -errno : fd;
}

/* syncfs() every fd in a child: it returns only once the file system's data is written and the device's
 * cache flushed, and the parent shows the progress meanwhile. The child exits 0, or with the errno of
 * the first syncfs() that failed. The child's pid, or -errno. */
static pid_t start_syncfs(const int *fds, size_t n) {
        pid_t pid = fork();

        if (pid < 0)
                return -errno;
        if (pid == 0) {
                int first_error = 0;

                for (size_t i = 0; i < n; i++)
                        if (syncfs(fds[i]) < 0 && first_error == 0)
                                first_error = errno;
                _exit(MIN(first_error, 255));
        }
        return pid;
}

static volatile sig_atomic_t wait_stop;

static void on_wait_signal(int sig) {
        wait_stop = sig;
}

/* show's device, checked against the protocol whatever --json says. */
static int wait_read_device(const char *key, json_object **ret_result) {
        json_object *request = oom_check(json_object_new_object());

        proto_add_string(request, PF_REQUEST_DEVICE, key);
        return call_request(PROTOCOL_VERB_SHOW, request, protocol_result_kind(PROTOCOL_VERB_SHOW, false), ret_result);
}

/* One reading for people or scripts: JSON, a line rewritten in place on a terminal, else a new line. */
static void wait_print(const ctl_wait_state *w, json_object *device, bool tty, bool last) {
        char line[1024];

        if (arg_json != JSON_OFF) {
                _cleanup_(json_object_putp) json_object *o =
                        ctl_wait_json(w, proto_str(device, PF_DEVICE_NAME), proto_str(device, PF_DEVICE_BDI));
                _cleanup_free_ char *json = json_text(o);
                printf("%s\n", json);
        } else {
                ctl_format_wait_line(w, proto_str(device, PF_DEVICE_NAME), tty && !last, line, sizeof line);
                if (tty)
                        printf("\r\033[K%s%s", line, last ? "\n" : "");
                else
                        printf("%s\n", line);
        }
        fflush(stdout);
}

/* Start the writeback of the device's file systems (syncfs on each mount point) and show its dirty and
 * writeback data draining, until there is none (0) or --timeout passes (EXIT_TIMEOUT). */
static int verb_wait(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL, *status = NULL;
        struct sigaction sa = { .sa_handler = on_wait_signal };
        bool tty = isatty(STDOUT_FILENO) && arg_json == JSON_OFF;
        int fds[WAIT_MOUNTS_MAX];
        size_t n_fds = 0;
        uint64_t start = now_usec(), tick_ms, interval_ms, last_print = 0, max_backlog = 0;
        pid_t child = 0;
        int r, sync_error = 0;

        r = wait_read_device(args[0], &result);
        if (r != 0)
                return r;
        r = call_request(PROTOCOL_VERB_STATUS, oom_check(json_object_new_object()), PK_STATUS, &status);
        if (r != 0)
                return r;
        tick_ms = proto_u64(status, PF_STATUS_TICK_MS);
        /* a new reading each tick, at least every second, at most ten a second */
        interval_ms = MIN(MAX(tick_ms, (uint64_t) 100), (uint64_t) 1000);

        json_object *device = proto_get(result, PF_SHOW_DEVICE), *mounts = proto_get(device, PF_DEVICE_MOUNTS);
        _cleanup_free_ char *name = escape_text_alloc(proto_str(device, PF_DEVICE_NAME));
        size_t n_mounts = json_object_array_length(mounts);

        /* the writeback starts from the file systems: a device without one can only be waited for */
        if (n_mounts == 0)
                fprintf(stderr, "wbtunectl: %s has no mount point: waiting for the kernel's own writeback "
                        "(vm.dirty_expire_centisecs)\n", name);
        for (size_t i = 0; i < n_mounts; i++) {
                const char *mount = proto_value_str(json_object_array_get_idx(mounts, i));
                _cleanup_free_ char *m = escape_text_alloc(mount);
                int fd;

                if (n_fds >= ELEMENTSOF(fds)) {
                        fprintf(stderr, "wbtunectl: %s has more than %zu mount points: syncing the first ones\n",
                                name, ELEMENTSOF(fds));
                        break;
                }
                fd = open_for_syncfs(mount);
                if (fd < 0) {
                        errno = -fd;
                        fprintf(stderr, "wbtunectl: cannot open %s to start its writeback (%s): waiting for the "
                                "kernel's own writeback of it\n", m, fd == -EINVAL ? "not a directory or a file" :
                                strerror(errno));
                        continue;
                }
                fds[n_fds++] = fd;
        }
        if (n_fds > 0) {
                child = start_syncfs(fds, n_fds);
                if (child < 0) {
                        errno = -child;
                        fprintf(stderr, "wbtunectl: cannot start the writeback of %s: %m\n", name);
                        child = 0;
                }
        }
        for (size_t i = 0; i < n_fds; i++)
                close(fds[i]);

        /* Clean: no data in the figures of a tick the daemon took after syncfs returned (a tick later than
         * the one status named once it had), or in any figures when there was nothing to sync. "No data"
         * is within the kernel's per-CPU counter error: a clean device can read a few KiB for good. */
        bool started = child > 0, synced = !started, have_sync_tick = !started;
        uint64_t clean_bytes = wait_counter_error_bytes();
        uint64_t sync_tick = 0;

        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        for (bool first = true;; first = false) {
                uint64_t now = now_usec(), elapsed_ms = (now - start) / 1000;
                ctl_wait_state w;
                int status_code;

                if (child > 0 && waitpid(child, &status_code, WNOHANG) == child) {
                        child = 0;
                        synced = true;
                        if (WIFEXITED(status_code) && WEXITSTATUS(status_code) != 0)
                                sync_error = WEXITSTATUS(status_code);
                }
                /* status before show: the device's figures are of that tick or a later one */
                if (!first) {
                        json_object_put(TAKE_PTR(status));
                        json_object_put(TAKE_PTR(result));
                        r = call_request(PROTOCOL_VERB_STATUS, oom_check(json_object_new_object()), PK_STATUS, &status);
                        if (r == 0)
                                r = wait_read_device(args[0], &result);
                        if (r != 0) {
                                if (child > 0)
                                        (void) kill(child, SIGKILL);
                                return r;
                        }
                        device = proto_get(result, PF_SHOW_DEVICE);
                }
                if (synced && !have_sync_tick) {
                        sync_tick = proto_u64(status, PF_STATUS_TICKS);
                        have_sync_tick = true;
                }
                w = (ctl_wait_state) {
                        .dirty_bytes = proto_u64(device, PF_DEVICE_DIRTY_BYTES),
                        .writeback_bytes = proto_u64(device, PF_DEVICE_WRITEBACK_BYTES),
                        .bw_bytes_per_s = ctl_device_bw(device),
                        .elapsed_s = (double) (now - start) / 1e6,
                        .syncing = child > 0,
                        .state = CTL_WAIT_WRITING,
                };
                max_backlog = MAX(max_backlog, w.dirty_bytes + w.writeback_bytes);
                w.max_backlog_bytes = max_backlog;

                if (w.dirty_bytes + w.writeback_bytes <= clean_bytes && synced &&
                    (!started || proto_u64(status, PF_STATUS_TICKS) > sync_tick)) {
                        w.state = CTL_WAIT_CLEAN;
                        wait_print(&w, device, tty, true);
                        if (sync_error) {
                                errno = sync_error;
                                fprintf(stderr, "wbtunectl: syncfs on a mount point of %s failed: %m\n", name);
                        }
                        return 0;
                }
                if (wait_stop || (arg_wait_timeout_ms > 0 && elapsed_ms >= arg_wait_timeout_ms)) {
                        uint64_t backlog = w.dirty_bytes + w.writeback_bytes;
                        double clean_in = ctl_clean_in_s(backlog, w.bw_bytes_per_s);
                        char left[32], bw[32], when[32], eta[96] = "";

                        w.state = CTL_WAIT_TIMEOUT;
                        wait_print(&w, device, tty, true);
                        if (backlog == 0)
                                snprintf(eta, sizeof eta, " (none in the last figures, but its syncfs had not returned)");
                        else if (clean_in > 0)
                                snprintf(eta, sizeof eta, ", clean in about %s at %s/s",
                                         ctl_format_duration(when, sizeof when, clean_in),
                                         format_bytes(bw, sizeof bw, w.bw_bytes_per_s));
                        fprintf(stderr, "wbtunectl: %s %s after %s: %s still dirty or under writeback%s\n", name,
                                wait_stop ? "interrupted" : "timed out",
                                ctl_format_duration(when, sizeof when, w.elapsed_s),
                                format_bytes(left, sizeof left, backlog), eta);
                        if (child > 0)
                                (void) kill(child, SIGKILL);   /* dies when its syncfs returns; the writeback goes on */
                        return wait_stop ? 128 + wait_stop : EXIT_TIMEOUT;
                }
                if (arg_json != JSON_OFF || tty || last_print == 0 || now >= last_print + 1000000) {
                        wait_print(&w, device, tty, false);
                        last_print = now;
                }

                uint64_t sleep_ms = interval_ms;
                if (arg_wait_timeout_ms > 0)
                        sleep_ms = MIN(sleep_ms, arg_wait_timeout_ms - elapsed_ms);
                struct timespec ts = { .tv_sec = (time_t) (sleep_ms / 1000), .tv_nsec = (long) (sleep_ms % 1000) * 1000000 };
                (void) nanosleep(&ts, NULL);   /* a signal ends it early */
        }
}

/* --- verbs and options ------------------------------------------------------------------------- */

static const struct {
        const char *name;
        unsigned min_args, max_args;
        int (*run)(char **args);
        const char *usage, *help;
        bool pager;              /* long output: through the pager on a terminal */
} verbs[] = {
        { "status",  0, 0, verb_status,  "status",   "Show the daemon, global dirty state and vm knobs (the default verb)", true },
        { "devices", 0, 0, verb_devices, "devices",  "List backing devices with dirty, bandwidth, clean-in time and knobs", true },
        { "show",    1, 1, verb_show,    "show DEV", "Show every field of one device (name, mount point or MAJ:MIN)", true },
        { "explain", 1, 1, verb_explain, "explain DEV", "Say in sentences why each knob of a device is set as it is", true },
        { "top",     0, 0, verb_top,     "top [--once]", "Live view: devices, who dirtied and who was throttled in the last seconds", false },
        { "wait",    1, 1, verb_wait,    "wait DEV", "Write back a device's data and wait until none is dirty (safe to unplug once unmounted)", false },
        { "history", 0, 1, verb_history, "history [DEV] [--csv]", "Per-tick samples of the last minutes (JSON, or CSV)", true },
        { "plot",    0, 1, verb_plot,    "plot [DEV] -o FILE.png", "Draw dirty, writeback, threshold and bandwidth over time (gnuplot)", false },
        { "metrics", 0, 0, verb_metrics, "metrics",  "Print the Prometheus metrics (text exposition format 0.0.4)", false },
        { "reload",  0, 0, verb_reload,  "reload",   "Re-read the configuration (root only)", false },
        { "restore", 0, 0, verb_restore, "restore",  "Put every knob back to its original value and stop tuning (root only)", false },
};

static const struct option options[] = {
        { "socket",    required_argument, NULL, 's' },
        { "json",      optional_argument, NULL, ARG_JSON },
        { "timeout",   required_argument, NULL, 't' },
        { "no-pager",  no_argument,       NULL, ARG_NO_PAGER },
        { "no-legend", no_argument,       NULL, ARG_NO_LEGEND },
        { "once",      no_argument,       NULL, ARG_ONCE },
        { "csv",       no_argument,       NULL, ARG_CSV },
        { "output",    required_argument, NULL, 'o' },
        { "list",      required_argument, NULL, ARG_LIST },
        { "help",      no_argument,       NULL, 'h' },
        { "version",   no_argument,       NULL, ARG_VERSION },
        {}
};

static void help(void) {
        printf("Usage: wbtunectl [OPTIONS] [VERB [ARGS]]\n\n"
               "Query and command wbtuned, the writeback tuning daemon.\n\n"
               "Verbs:\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                printf("  %-23s %s\n", verbs[i].usage, verbs[i].help);
        printf("\nOptions:\n"
               "  -s --socket PATH         Control socket (default: %s)\n"
               "  -j --json[=MODE]         Print the daemon's result as JSON: pretty (the default of -j and --json),\n"
               "                           short (one line) or off\n"
               "  -t --timeout DURATION    Give up when the daemon sends nothing for so long (\"500ms\", \"5s\";\n"
               "                           a bare number is seconds; default 5s); wait: wait at most so long\n"
               "     --no-pager            Do not pipe long output into a pager\n"
               "     --no-legend           Print tables without their header row\n"
               "     --once                top: print one view and exit\n"
               "     --csv                 history: CSV instead of JSON\n"
               "  -o --output FILE         plot: the PNG to write\n"
               "     --list=WHAT           Print verbs, options or devices (names and mount points), one a line,\n"
               "                           for shell completion\n"
               "  -h --help                Show this help\n"
               "     --version             Show the version\n"
               "\nWithout a verb, wbtunectl shows the status.\n"
               "\nExit status:\n"
               "  0 success, 1 the daemon answered with an error, 2 usage error,\n"
               "  3 the daemon is not reachable or its reply cannot be read, 4 permission denied,\n"
               "  5 wait: the device still held dirty data when --timeout passed.\n"
               "\nSee wbtunectl(8).\n", PROTOCOL_DEFAULT_SOCKET);
}

static int usage_error(const char *format, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *format, ...) {
        va_list ap;

        fputs("wbtunectl: ", stderr);
        va_start(ap, format);
        vfprintf(stderr, format, ap);
        va_end(ap);
        fputs(" (see wbtunectl --help)\n", stderr);
        return EXIT_USAGE;
}

/* --list=devices: every name a device can be given by, escaped (its backslashes kept: the shell completes
 * these as paths), one a line, each once. */
static int list_devices(void) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        json_object *devices;
        int r;

        r = call_request(PROTOCOL_VERB_DEVICES, oom_check(json_object_new_object()), PK_DEVICES, &result);
        if (r != 0)
                return r;
        devices = proto_get(result, PF_DEVICES_DEVICES);
        for (size_t i = 0; i < json_object_array_length(devices); i++) {
                json_object *d = json_object_array_get_idx(devices, i), *mounts = proto_get(d, PF_DEVICE_MOUNTS);
                const char *names[] = { proto_str(d, PF_DEVICE_NAME), proto_str(d, PF_DEVICE_ALIAS),
                                        proto_str(d, PF_DEVICE_BDI) };

                for (size_t k = 0; k < ELEMENTSOF(names); k++)
                        if (*names[k] && (k == 0 || strcmp(names[k], names[0]) != 0)) {
                                _cleanup_free_ char *e = escape_text_keep_backslash_alloc(names[k]);
                                printf("%s\n", e);
                        }
                for (size_t k = 0; k < json_object_array_length(mounts); k++) {
                        _cleanup_free_ char *e =
                                escape_text_keep_backslash_alloc(proto_value_str(json_object_array_get_idx(mounts, k)));
                        printf("%s\n", e);
                }
        }
        return fflush(stdout) == 0 ? 0 : EXIT_DAEMON_ERROR;
}

static int list(const char *what) {
        if (strcmp(what, "verbs") == 0)
                for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                        printf("%s\n", verbs[i].name);
        else if (strcmp(what, "options") == 0)
                for (const struct option *o = options; o->name; o++)
                        printf("--%s%s\n", o->name, o->has_arg == required_argument ? "=" : "");
        else if (strcmp(what, "devices") == 0)
                return list_devices();
        else
                return usage_error("--list takes verbs, options or devices, not '%s'", what);
        return fflush(stdout) == 0 ? 0 : EXIT_DAEMON_ERROR;
}

/* Colours, for warnings only: on a terminal, unless NO_COLOR is set or SYSTEMD_COLORS says no (as
 * systemd; SYSTEMD_COLORS=1 forces them on, e.g. into less -R). */
static bool colors_enabled(void) {
        const char *forced = getenv("SYSTEMD_COLORS"), *no_color = getenv("NO_COLOR"), *term = getenv("TERM");

        if (parse_boolean(forced) >= 0)
                return parse_boolean(forced);
        if (no_color && *no_color)
                return false;
        if (term && strcmp(term, "dumb") == 0)
                return false;
        return isatty(STDOUT_FILENO);
}

/* 0 to go on, or an exit status (<0 meaning exit 0 after --help/--version). */
static int parse_argv(int argc, char *argv[]) {
        int c;

        opterr = 0;
        while ((c = getopt_long(argc, argv, ":s:jt:o:h", options, NULL)) >= 0) {
                switch (c) {
                case 's':
                        if (optarg[0] == '\0')
                                return usage_error("--socket needs a path");
                        arg_socket = optarg;
                        break;
                case 'j':
                        arg_json = JSON_PRETTY;
                        break;
                case ARG_JSON:
                        if (!optarg || strcmp(optarg, "pretty") == 0)
                                arg_json = JSON_PRETTY;
                        else if (strcmp(optarg, "short") == 0)
                                arg_json = JSON_SHORT;
                        else if (strcmp(optarg, "off") == 0)
                                arg_json = JSON_OFF;
                        else
                                return usage_error("invalid --json='%s', expected pretty, short or off", optarg);
                        break;
                case 't': {
                        uint64_t ms;
                        if (parse_duration_ms(optarg, &ms) < 0 || ms == 0 || ms > INT_MAX)
                                return usage_error("invalid --timeout '%s', expected a duration > 0 (\"500ms\", \"5s\", "
                                                   "\"2min\"; a bare number is seconds)", optarg);
                        arg_timeout_ms = (int) ms;
                        arg_timeout_set = true;
                        break;
                }
                case ARG_NO_PAGER:
                        arg_pager = false;
                        break;
                case ARG_NO_LEGEND:
                        arg_legend = false;
                        break;
                case ARG_ONCE:
                        arg_once = true;
                        break;
                case ARG_CSV:
                        arg_csv = true;
                        break;
                case 'o':
                        if (optarg[0] == '\0')
                                return usage_error("--output needs a file name");
                        arg_output = optarg;
                        break;
                case ARG_LIST:
                        arg_list = optarg;
                        break;
                case 'h':
                        help();
                        return -1;
                case ARG_VERSION:
                        printf("wbtunectl %s\n", PACKAGE_VERSION);
                        return -1;
                case ':':
                        return usage_error("option '%s' needs an argument", argv[optind - 1]);
                default:
                        return usage_error("unknown option '%s'", argv[optind - 1]);
                }
        }
        return 0;
}

int main(int argc, char *argv[]) {
        static char *no_args[] = { NULL };
        int r = parse_argv(argc, argv);
        if (r != 0)
                return r < 0 ? 0 : r;

        ctl_format_set_style(arg_legend, colors_enabled());
        if (arg_list)
                return list(arg_list);

        /* no verb: status, as systemctl lists its units */
        const char *verb = optind < argc ? argv[optind] : "status";
        unsigned n_args = optind < argc ? (unsigned) (argc - optind - 1) : 0;
        char **args = optind < argc ? argv + optind + 1 : no_args;

        for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
                if (strcmp(verbs[i].name, verb) != 0)
                        continue;
                if (n_args < verbs[i].min_args || n_args > verbs[i].max_args) {
                        fprintf(stderr, "wbtunectl: wrong number of arguments for '%s', usage: wbtunectl %s\n",
                                verb, verbs[i].usage);
                        return EXIT_USAGE;
                }
                /* wait: --timeout is how long to wait; each reply keeps its own limit */
                if (verbs[i].run == verb_wait && arg_timeout_set) {
                        arg_wait_timeout_ms = (uint64_t) arg_timeout_ms;
                        arg_timeout_ms = MIN(arg_timeout_ms, REPLY_TIMEOUT_MS_DEFAULT);
                }
                use_pager = verbs[i].pager;
                r = verbs[i].run(args);
                pager_close();
                return r;
        }
        return usage_error("unknown verb '%s'", verb);
}
