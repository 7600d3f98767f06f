/* wbtunectl: query and command wbtuned over its control socket. */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "config.h"
#include "control.h"
#include "ctl-format.h"
#include "escape.h"
#include "metrics.h"
#include "protocol.h"
#include "util.h"

/* Exit codes, documented in --help and wbtunectl(8). */
enum {
        EXIT_DAEMON_ERROR = 1,   /* the daemon answered with an error */
        EXIT_USAGE = 2,
        EXIT_UNREACHABLE = 3,    /* no daemon, no answer, or a garbled one */
        EXIT_PERMISSION = 4,     /* the daemon answered EPERM */
};

enum { ARG_SOCKET = 0x100, ARG_JSON, ARG_TIMEOUT, ARG_VERSION, ARG_ONCE, ARG_CSV };

static void json_object_putp(json_object **o) {
        json_object_put(*o);
}

static const char *arg_socket = CONFIG_DEFAULT_SOCKET;
static bool arg_json;
static int arg_timeout_ms = 5000;
static bool arg_once, arg_csv;
static const char *arg_output;

static int call_request(const char *verb, json_object *request, protocol_kind kind, json_object **ret_result);

/* The result kind the reply to verb is checked against: none in --json mode (it is printed as it
 * comes; only its envelope is checked), else the verb's. */
static protocol_kind result_kind(const char *verb, bool csv) {
        return arg_json ? PK_NONE : protocol_result_kind(verb, csv);
}

/* Send {"verb":verb, ...extra} and hand back the "result", or print why not and return an exit code. */
static int call(const char *verb, const char *arg_key, const char *arg_value, json_object **ret_result) {
        json_object *request = json_object_new_object();

        if (arg_key)
                json_object_object_add(request, arg_key, json_object_new_string(arg_value));
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

static int print_json(json_object *o) {
        if (json_object_object_length(o) == 0) {
                puts("{}");
                return 0;
        }
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                               JSON_C_TO_STRING_NOSLASHESCAPE));
        return 0;
}

/* Render with a formatter into memory, then print: a reply that cannot be shown prints nothing but why. */
static int render(const char *verb, int (*format)(json_object *, FILE *), json_object *o) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        int r;

        if (!f) {
                fprintf(stderr, "wbtunectl: out of memory\n");
                return EXIT_DAEMON_ERROR;
        }
        r = format(o, f);
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0) {
                errno = -r;
                fprintf(stderr, "wbtunectl: cannot show wbtuned's reply to %s: %m\n", verb);
                return EXIT_DAEMON_ERROR;
        }
        if (size > 0 && fwrite(text, 1, size, stdout) != size)
                return EXIT_DAEMON_ERROR;
        return fflush(stdout) == 0 ? 0 : EXIT_DAEMON_ERROR;
}

static int verb_status(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call(PROTOCOL_VERB_STATUS, NULL, NULL, &result);
        if (r != 0)
                return r;
        return arg_json ? print_json(result) : render(PROTOCOL_VERB_STATUS, ctl_format_status, result);
}

static int verb_devices(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call(PROTOCOL_VERB_DEVICES, NULL, NULL, &result);
        if (r != 0)
                return r;
        return arg_json ? print_json(result) : render(PROTOCOL_VERB_DEVICES, ctl_format_devices, result);
}

static int verb_show(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call(PROTOCOL_VERB_SHOW, protocol_name(PF_REQUEST_DEVICE), args[0], &result);
        if (r != 0)
                return r;
        return arg_json ? print_json(result) : render(PROTOCOL_VERB_SHOW, ctl_format_show, result);
}

static int verb_reload(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call(PROTOCOL_VERB_RELOAD, NULL, NULL, &result);
        if (r != 0)
                return r;
        return arg_json ? print_json(result) : 0;
}

static int verb_explain(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call(PROTOCOL_VERB_EXPLAIN, protocol_name(PF_REQUEST_DEVICE), args[0], &result);
        if (r != 0)
                return r;
        return arg_json ? print_json(result) : render(PROTOCOL_VERB_EXPLAIN, ctl_format_explain, result);
}

static int verb_restore(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call(PROTOCOL_VERB_RESTORE, NULL, NULL, &result);
        if (r != 0)
                return r;
        if (arg_json)
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
                if (arg_json)
                        print_json(result);
                else {
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
        json_object *request = json_object_new_object();

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

/* gnuplot's script for plot: constant. The output file, the data file and the title come in as ARG1,
 * ARG2 and ARG3 (gnuplot -c), string variables gnuplot never reads as code. */
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
        _cleanup_free_ char *title = NULL;
        char error[256] = "";
        uint64_t rows = 0;
        int r, fd, status;
        pid_t pid;

        if (!arg_output)
                return usage_error("plot needs -o FILE.png");
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
                execlp("gnuplot", "gnuplot", "-c", script_path, arg_output, data_path, title,
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

static const struct {
        const char *name;
        unsigned min_args, max_args;
        int (*run)(char **args);
        const char *usage, *help;
} verbs[] = {
        { "status",  0, 0, verb_status,  "status",   "Show the daemon, global dirty state and vm knobs" },
        { "devices", 0, 0, verb_devices, "devices",  "List backing devices with dirty, bandwidth and knobs" },
        { "show",    1, 1, verb_show,    "show DEV", "Show every field of one device (name, mount point or MAJ:MIN)" },
        { "explain", 1, 1, verb_explain, "explain DEV", "Say in sentences why each knob of a device is set as it is" },
        { "top",     0, 0, verb_top,     "top [--once]", "Live view: devices, who dirties most and who is throttled most" },
        { "history", 0, 1, verb_history, "history [DEV] [--csv]", "Per-tick samples of the last minutes (JSON, or CSV)" },
        { "plot",    0, 1, verb_plot,    "plot [DEV] -o FILE.png", "Draw dirty, writeback, threshold and bandwidth over time (gnuplot)" },
        { "metrics", 0, 0, verb_metrics, "metrics",  "Print the Prometheus metrics (text exposition format 0.0.4)" },
        { "reload",  0, 0, verb_reload,  "reload",   "Re-read the configuration (root only)" },
        { "restore", 0, 0, verb_restore, "restore",  "Put every knob back to its original value and stop tuning (root only)" },
};

static void help(void) {
        printf("Usage: wbtunectl [OPTIONS] VERB [ARGS]\n\n"
               "Query and command wbtuned, the writeback tuning daemon.\n\n"
               "Verbs:\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                printf("  %-12s %s\n", verbs[i].usage, verbs[i].help);
        printf("\nOptions:\n"
               "  -s --socket PATH   Control socket (default: %s)\n"
               "  -j --json          Print the daemon's result object as JSON\n"
               "  -t --timeout MS    Give up when the daemon sends nothing for MS milliseconds (default: 5000)\n"
               "     --once         top: print one view and exit\n"
               "     --csv          history: CSV instead of JSON\n"
               "  -o --output FILE  plot: the PNG to write\n"
               "  -h --help          Show this help\n"
               "     --version       Show the version\n"
               "\nExit status:\n"
               "  0 success, 1 the daemon answered with an error, 2 usage error,\n"
               "  3 the daemon is not reachable or its reply cannot be read, 4 permission denied.\n"
               "\nSee wbtunectl(8).\n", CONFIG_DEFAULT_SOCKET);
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

/* 0 to go on, or an exit status (<0 meaning exit 0 after --help/--version). */
static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "socket",  required_argument, NULL, 's' },
                { "json",    no_argument,       NULL, 'j' },
                { "timeout", required_argument, NULL, 't' },
                { "once",    no_argument,       NULL, ARG_ONCE },
                { "csv",     no_argument,       NULL, ARG_CSV },
                { "output",  required_argument, NULL, 'o' },
                { "help",    no_argument,       NULL, 'h' },
                { "version", no_argument,       NULL, ARG_VERSION },
                {}
        };
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
                        arg_json = true;
                        break;
                case 't': {
                        uint64_t ms;
                        if (parse_u64(optarg, &ms) < 0 || ms == 0 || ms > INT_MAX)
                                return usage_error("invalid --timeout '%s', expected milliseconds > 0", optarg);
                        arg_timeout_ms = (int) ms;
                        break;
                }
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
        int r = parse_argv(argc, argv);
        if (r != 0)
                return r < 0 ? 0 : r;

        if (optind >= argc)
                return usage_error("missing verb");

        const char *verb = argv[optind];
        unsigned n_args = (unsigned) (argc - optind - 1);
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
                if (strcmp(verbs[i].name, verb) != 0)
                        continue;
                if (n_args < verbs[i].min_args || n_args > verbs[i].max_args) {
                        fprintf(stderr, "wbtunectl: wrong number of arguments for '%s', usage: wbtunectl %s\n",
                                verb, verbs[i].usage);
                        return EXIT_USAGE;
                }
                return verbs[i].run(argv + optind + 1);
        }
        return usage_error("unknown verb '%s'", verb);
}
