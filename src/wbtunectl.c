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

static int call_request(const char *verb, json_object *request, json_object **ret_result);

/* Send {"verb":verb, ...extra} and hand back the "result", or print why not and return an exit code. */
static int call(const char *verb, const char *arg_key, const char *arg_value, json_object **ret_result) {
        json_object *request = json_object_new_object();

        if (arg_key)
                json_object_object_add(request, arg_key, json_object_new_string(arg_value));
        return call_request(verb, request, ret_result);
}

/* Takes request (arguments only; "verb" is added). */
static int call_request(const char *verb, json_object *request, json_object **ret_result) {
        json_object *reply = NULL, *v;
        int r;

        json_object_object_add(request, "verb", json_object_new_string(verb));
        r = control_call(arg_socket, request, &reply, arg_timeout_ms);
        json_object_put(request);

        if (r < 0) {
                errno = -r;
                if (r == -ENOENT)
                        fprintf(stderr, "wbtunectl: wbtuned is not running (no socket at %s: %m)\n", arg_socket);
                else if (r == -ECONNREFUSED)
                        fprintf(stderr, "wbtunectl: wbtuned is not running (nobody listens on %s: %m)\n", arg_socket);
                else if (r == -ETIMEDOUT)
                        fprintf(stderr, "wbtunectl: wbtuned did not answer within %d ms on %s\n", arg_timeout_ms, arg_socket);
                else if (r == -ECONNRESET || r == -EPIPE)
                        fprintf(stderr, "wbtunectl: wbtuned closed the connection on %s without answering\n", arg_socket);
                else if (r == -EBADMSG)
                        fprintf(stderr, "wbtunectl: wbtuned sent a reply that is not a JSON object on %s\n", arg_socket);
                else
                        fprintf(stderr, "wbtunectl: cannot talk to wbtuned on %s: %m\n", arg_socket);
                return EXIT_UNREACHABLE;
        }

        if (!json_object_object_get_ex(reply, "ok", &v) || !json_object_get_boolean(v)) {
                const char *error = json_object_object_get_ex(reply, "error", &v) ? json_object_get_string(v) : NULL;
                const char *name = json_object_object_get_ex(reply, "errno", &v) ? json_object_get_string(v) : NULL;
                if (error && strchr(error, '\n'))
                        /* Several lines (config errors "FILE:LINE: ..."): keep them verbatim, one per line. */
                        fprintf(stderr, "wbtunectl: %s failed:\n%s\n", verb, error);
                else
                        fprintf(stderr, "wbtunectl: %s: %s\n", verb, error ? error : "failed without a reason");
                r = name && strcmp(name, "EPERM") == 0 ? EXIT_PERMISSION : EXIT_DAEMON_ERROR;
                json_object_put(reply);
                return r;
        }

        if (!json_object_object_get_ex(reply, "result", &v) || !json_object_is_type(v, json_type_object)) {
                fprintf(stderr, "wbtunectl: wbtuned's reply to %s has no result object\n", verb);
                json_object_put(reply);
                return EXIT_UNREACHABLE;
        }
        *ret_result = json_object_get(v);
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

/* Render with a formatter, or say the daemon's answer did not have the expected shape. */
static int render(const char *verb, int (*format)(json_object *, FILE *), json_object *o) {
        int r = format(o, stdout);
        if (r < 0) {
                errno = -r;
                fprintf(stderr, "wbtunectl: cannot show wbtuned's reply to %s: %m\n", verb);
                return EXIT_DAEMON_ERROR;
        }
        return fflush(stdout) == 0 ? 0 : EXIT_DAEMON_ERROR;
}

static int verb_status(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call("status", NULL, NULL, &result);
        if (r != 0)
                return r;
        return arg_json ? print_json(result) : render("status", ctl_format_status, result);
}

static int verb_devices(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call("devices", NULL, NULL, &result);
        if (r != 0)
                return r;
        return arg_json ? print_json(result) : render("devices", ctl_format_devices, result);
}

static int verb_show(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        json_object *device = NULL;
        int r = call("show", "device", args[0], &result);
        if (r != 0)
                return r;
        if (arg_json)
                return print_json(result);
        (void) json_object_object_get_ex(result, "device", &device);
        return render("show", ctl_format_device, device);
}

static int verb_reload(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call("reload", NULL, NULL, &result);
        if (r != 0)
                return r;
        return arg_json ? print_json(result) : 0;
}

static int verb_explain(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call("explain", "device", args[0], &result);
        if (r != 0)
                return r;
        if (arg_json)
                return print_json(result);
        fputs(json_object_get_string(json_object_object_get(result, "text")), stdout);
        return fflush(stdout) == 0 ? 0 : EXIT_DAEMON_ERROR;
}

static int verb_restore(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        int r = call("restore", NULL, NULL, &result);
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
                int r = call("top", NULL, NULL, &result);
                uint64_t tick_ms;

                if (r != 0)
                        return r;
                if (arg_json)
                        print_json(result);
                else {
                        if (tty && !arg_once)
                                fputs("\033[H\033[2J", stdout);   /* home, clear screen */
                        r = render("top", arg_once || !tty ? ctl_format_top_all : ctl_format_top_screen, result);
                        if (r != 0)
                                return r;
                }
                if (fflush(stdout) != 0)
                        return EXIT_DAEMON_ERROR;
                if (arg_once)
                        break;
                tick_ms = json_object_get_uint64(json_object_object_get(result, "tick_ms"));
                if (tick_ms == 0)
                        tick_ms = 1000;
                struct timespec ts = { .tv_sec = (time_t) (tick_ms / 1000), .tv_nsec = (long) (tick_ms % 1000) * 1000000 };
                (void) nanosleep(&ts, NULL);   /* a signal ends the wait and the loop */
        }
        return 0;
}

/* History of the whole machine, or of one device: CSV with --csv, JSON otherwise. */
static int verb_history(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        json_object *request = json_object_new_object();
        int r;

        if (args[0])
                json_object_object_add(request, "device", json_object_new_string(args[0]));
        json_object_object_add(request, "format", json_object_new_string(arg_csv ? "csv" : "json"));
        r = call_request("history", request, &result);
        if (r != 0)
                return r;
        if (arg_csv) {
                fputs(json_object_get_string(json_object_object_get(result, "csv")), stdout);
                return fflush(stdout) == 0 ? 0 : EXIT_DAEMON_ERROR;
        }
        return print_json(result);
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

/* The history CSV into a gnuplot data file: seconds from the first sample, sizes in MiB. */
static int write_plot_data(const char *csv, FILE *out, bool device, uint64_t *ret_rows) {
        uint64_t t0 = 0, rows = 0;
        const char *line = strchr(csv, '\n');

        for (line = line ? line + 1 : NULL; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                unsigned long long v[11] = {};
                int n = sscanf(line, "%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu",
                               &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10]);
                const double mib = 1024.0 * 1024.0;

                if (n < (device ? 11 : 5))
                        continue;
                if (rows++ == 0)
                        t0 = v[0];
                if (device)
                        fprintf(out, "%.3f %.3f %.3f %.3f %.3f %.3f\n", (double) (v[0] - t0) / 1e6,
                                v[5] / mib, v[6] / mib, v[7] / mib, v[8] / mib, v[1] / mib);
                else
                        fprintf(out, "%.3f %.3f %.3f %.3f %.3f\n", (double) (v[0] - t0) / 1e6,
                                v[1] / mib, v[2] / mib, v[3] / mib, v[4] / mib);
        }
        *ret_rows = rows;
        return fflush(out) == 0 && !ferror(out) ? 0 : -EIO;
}

/* Dirty, writeback, threshold and bandwidth over time into a PNG, with gnuplot. */
static int verb_plot(char **args) {
        _cleanup_(json_object_putp) json_object *result = NULL;
        char data_path[] = "/tmp/wbtunectl-plot-XXXXXX", script_path[] = "/tmp/wbtunectl-plot-XXXXXX";
        _cleanup_fclose_ FILE *data = NULL, *script = NULL;
        json_object *request;
        const char *bdi;
        uint64_t rows = 0;
        int r, fd, status;
        pid_t pid;

        if (!arg_output)
                return usage_error("plot needs -o FILE.png");
        if (!in_path("gnuplot")) {
                fprintf(stderr, "wbtunectl: gnuplot is not installed (apt-get install gnuplot-nox)\n");
                return EXIT_DAEMON_ERROR;
        }
        request = json_object_new_object();
        if (args[0])
                json_object_object_add(request, "device", json_object_new_string(args[0]));
        json_object_object_add(request, "format", json_object_new_string("csv"));
        r = call_request("history", request, &result);
        if (r != 0)
                return r;
        bdi = json_object_get_string(json_object_object_get(result, "bdi"));

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
        r = write_plot_data(json_object_get_string(json_object_object_get(result, "csv")), data, args[0] != NULL, &rows);
        fprintf(script,
                "set terminal pngcairo size 1100,600 noenhanced\n"
                "set output '%s'\n"
                "set title 'wbtuned history: %s'\n"
                "set xlabel 'seconds'\nset ylabel 'MiB'\nset key outside bottom center horizontal\n"
                "set grid\nset yrange [0:*]\n", arg_output, bdi ? bdi : "global");
        if (args[0])
                fprintf(script,
                        "set y2label 'MiB/s'\nset y2tics\nset ytics nomirror\nset y2range [0:*]\n"
                        "plot '%1$s' using 1:2 with lines lw 2 title 'dirty', "
                        "'' using 1:3 with lines lw 2 title 'writeback', "
                        "'' using 1:4 with lines lw 2 title 'threshold', "
                        "'' using 1:5 axes x1y2 with lines lw 2 dt 2 title 'bandwidth (MiB/s)', "
                        "'' using 1:6 with lines lw 1 title 'global dirty'\n", data_path);
        else
                fprintf(script,
                        "plot '%1$s' using 1:2 with lines lw 2 title 'dirty', "
                        "'' using 1:3 with lines lw 2 title 'writeback', "
                        "'' using 1:4 with lines lw 2 title 'threshold', "
                        "'' using 1:5 with lines lw 1 title 'background threshold'\n", data_path);
        if (r < 0 || fflush(script) != 0 || rows == 0) {
                fprintf(stderr, "wbtunectl: %s\n", rows == 0 ? "no history to plot yet" : "cannot write the plot files");
                unlink(data_path);
                unlink(script_path);
                return EXIT_DAEMON_ERROR;
        }

        fflush(stdout);
        pid = fork();
        if (pid == 0) {
                execlp("gnuplot", "gnuplot", script_path, (char *) NULL);
                _exit(127);
        }
        status = -1;
        if (pid > 0)
                while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                        ;
        unlink(data_path);
        unlink(script_path);
        if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "wbtunectl: gnuplot failed to draw %s\n", arg_output);
                return EXIT_DAEMON_ERROR;
        }
        printf("Wrote %s: %" PRIu64 " samples of %s.\n", arg_output, rows, bdi ? bdi : "the global state");
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
               "  -t --timeout MS    Give up waiting for the daemon after MS milliseconds (default: 5000)\n"
               "     --once         top: print one view and exit\n"
               "     --csv          history: CSV instead of JSON\n"
               "  -o --output FILE  plot: the PNG to write\n"
               "  -h --help          Show this help\n"
               "     --version       Show the version\n"
               "\nExit status:\n"
               "  0 success, 1 the daemon answered with an error, 2 usage error,\n"
               "  3 the daemon is not reachable, 4 permission denied.\n"
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
