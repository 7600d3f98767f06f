/* wbtunectl: query and command wbtuned over its control socket. */
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>

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

enum { ARG_SOCKET = 0x100, ARG_JSON, ARG_TIMEOUT, ARG_VERSION };

static void json_object_putp(json_object **o) {
        json_object_put(*o);
}

static const char *arg_socket = CONFIG_DEFAULT_SOCKET;
static bool arg_json;
static int arg_timeout_ms = 5000;

/* Send {"verb":verb, ...extra} and hand back the "result", or print why not and return an exit code. */
static int call(const char *verb, const char *arg_key, const char *arg_value, json_object **ret_result) {
        json_object *request = json_object_new_object(), *reply = NULL, *v;
        int r;

        json_object_object_add(request, "verb", json_object_new_string(verb));
        if (arg_key)
                json_object_object_add(request, arg_key, json_object_new_string(arg_value));
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
                { "help",    no_argument,       NULL, 'h' },
                { "version", no_argument,       NULL, ARG_VERSION },
                {}
        };
        int c;

        opterr = 0;
        while ((c = getopt_long(argc, argv, ":s:jt:h", options, NULL)) >= 0) {
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
