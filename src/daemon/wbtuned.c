/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbtuned: watch the kernel's dirty-page and writeback state per backing device. */
#include "config.h"
#include "log.h"
#include "knobs.h"
#include "manager.h"
#include "speeds.h"
#include "savedfile.h"
#include "util.h"

#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

enum { ARG_SOCKET = 0x100, ARG_STATE_DIR, ARG_SPEEDS_DIR, ARG_INSPECT_SAVED, ARG_LIST_KNOBS, ARG_ROOT, ARG_DRY_RUN, ARG_CHECK_CONFIG, ARG_VERSION, ARG_QUIET };

static const char *arg_config = CONFIG_DEFAULT_PATH;
static const char *arg_socket;
static const char *arg_state_dir;
static const char *arg_speeds_dir;
static const char *arg_inspect_saved;
static const char *arg_root;
static bool arg_dry_run, arg_check_config, arg_quiet;

static void help(void) {
        printf("Usage: wbtuned [OPTIONS]\n\n"
               "Watch dirty-page and writeback state per backing device and tune the\n"
               "kernel's dirty limits.\n\n"
               "  -c --config FILE   configuration file (default %s,\n"
               "                     plus FILE.d/*.conf)\n"
               "     --socket PATH   control socket (default: the config's, %s)\n"
               "     --state-dir DIR directory of the saved original knob values\n"
               "                     (default %s; owned by root, writable by nobody else)\n"
               "     --speeds-dir DIR\n"
               "                     directory of the remembered device speeds (default: the\n"
               "                     --state-dir if given, else " SPEEDS_DIR ")\n"
               "     --list-knobs    print every knob the daemon may write: files, unit, kernel\n"
               "     --inspect-saved FILE\n"
               "                     check a saved-originals file and print what it lists;\n"
               "                     exit 0 if the daemon would trust it, 1 if not\n"
               "     --root DIR      read /proc and /sys under DIR (a fake tree, for tests);\n"
               "                     never mounts anything; implies --dry-run\n"
               "     --dry-run       observe and show what would be done; write no knob\n"
               "     --check-config  print the merged configuration; exit 0 if valid, 1 if not\n"
               "     --quiet         no per-tick summary on stdout in the foreground\n"
               "  -h --help          show this help\n"
               "     --version       show the version\n\n"
               "See wbtuned(8), wbtuned.conf(5) and wbtunectl(8).\n",
               CONFIG_DEFAULT_PATH, CONFIG_DEFAULT_SOCKET, MANAGER_STATE_DIR);
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "config",       required_argument, NULL, 'c' },
                { "socket",       required_argument, NULL, ARG_SOCKET },
                { "state-dir",    required_argument, NULL, ARG_STATE_DIR },
                { "speeds-dir",   required_argument, NULL, ARG_SPEEDS_DIR },
                { "inspect-saved", required_argument, NULL, ARG_INSPECT_SAVED },
                { "list-knobs",   optional_argument, NULL, ARG_LIST_KNOBS },
                { "root",         required_argument, NULL, ARG_ROOT },
                { "dry-run",      no_argument,       NULL, ARG_DRY_RUN },
                { "check-config", no_argument,       NULL, ARG_CHECK_CONFIG },
                { "quiet",        no_argument,       NULL, ARG_QUIET },
                { "help",         no_argument,       NULL, 'h' },
                { "version",      no_argument,       NULL, ARG_VERSION },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "c:h", options, NULL)) >= 0)
                switch (c) {
                case 'c': arg_config = optarg; break;
                case ARG_SOCKET:
                        if (optarg[0] != '/' || strlen(optarg) >= 108) {
                                fprintf(stderr, "wbtuned: --socket %s: must be an absolute path shorter than 108 bytes\n", optarg);
                                return -EINVAL;
                        }
                        arg_socket = optarg;
                        break;
                case ARG_STATE_DIR:
                        if (optarg[0] != '/') {
                                fprintf(stderr, "wbtuned: --state-dir %s: must be an absolute path\n", optarg);
                                return -EINVAL;
                        }
                        arg_state_dir = optarg;
                        break;
                case ARG_SPEEDS_DIR:
                        if (optarg[0] != '/') {
                                fprintf(stderr, "wbtuned: --speeds-dir %s: must be an absolute path\n", optarg);
                                return -EINVAL;
                        }
                        arg_speeds_dir = optarg;
                        break;
                case ARG_INSPECT_SAVED: arg_inspect_saved = optarg; break;
                case ARG_LIST_KNOBS:
                        if (optarg && strcmp(optarg, "scdoc") != 0) {
                                fprintf(stderr, "wbtuned: --list-knobs=%s: the only format is scdoc\n", optarg);
                                return -EINVAL;
                        }
                        knob_table_print(stdout, optarg != NULL);
                        return 0;
                case ARG_ROOT:
                        /* plain files cannot act like the kernel's knobs: never write into a fake tree */
                        arg_root = optarg;
                        arg_dry_run = true;
                        break;
                case ARG_DRY_RUN: arg_dry_run = true; break;
                case ARG_CHECK_CONFIG: arg_check_config = true; break;
                case ARG_QUIET: arg_quiet = true; break;
                case 'h': help(); return 0;
                case ARG_VERSION: printf("wbtuned %s\n", PACKAGE_VERSION); return 0;
                default:
                        fprintf(stderr, "Try 'wbtuned --help'.\n");
                        return -EINVAL;
                }
        if (optind < argc) {
                fprintf(stderr, "wbtuned: unexpected argument '%s'. Try 'wbtuned --help'.\n", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

/* Refuse to start, with one line, when something the daemon cannot work without is missing. */
static int check_prerequisites(void) {
        _cleanup_free_ char *bdi = path_join_root(arg_root, "/sys/class/bdi");
        struct stat st;

        if (!bdi)
                return log_oom_error();
        if (stat(bdi, &st) < 0)
                return log_error_errno(errno, "Cannot start: %s is missing (%m); this kernel exposes no backing devices.", bdi);
        if (!arg_root && !arg_dry_run && geteuid() != 0)
                return log_error_errno(EPERM, "Cannot start: tuning needs root; run as root, or with --dry-run to only observe.");
        return 0;
}

/* Writers run at normal priority; a real-time reader sees limits 25% larger (domain_dirty_limits). */
static void drop_realtime_priority(void) {
        struct sched_param sp = { .sched_priority = 0 };
        int policy = sched_getscheduler(0);

        if (policy == SCHED_FIFO || policy == SCHED_RR) {
                if (sched_setscheduler(0, SCHED_OTHER, &sp) < 0)
                        log_warning_errno(errno, "Running with real-time priority and failed to drop it: %m; thresholds read will be 25%% high.");
                else
                        log_info("Dropped real-time priority: the kernel shows real-time tasks larger dirty limits.");
        }
}

/* --inspect-saved: the verdict the daemon would reach at start, and the entries. */
static int inspect_saved(const char *path) {
        _cleanup_free_ saved_entry *entries = NULL;
        _cleanup_free_ char *why = NULL;
        long ps = sysconf(_SC_PAGESIZE);
        size_t n = 0;
        int r;

        r = saved_file_read(path, ps > 0 ? (uint64_t) ps : 4096, &entries, &n, &why);
        if (r == -ENOENT) {
                fprintf(stderr, "%s: no such file: nothing to restore.\n", path);
                return 1;
        }
        if (r < 0) {
                fprintf(stderr, "%s is not trusted: it %s.\n", path, why ? why : strerror(-r));
                return 1;
        }
        printf("%s: version %d, checksum valid, %zu knob(s):\n", path, SAVED_FILE_VERSION, n);
        saved_entries_print(entries, n, stdout);
        return 0;
}

/* Test only (tests/test-nspawn.sh, the watchdog check): with WBTUNED_TEST_HANG=sigusr2 in the
 * environment, SIGUSR2 stops the event loop for good, as a hung daemon would. Never set by the
 * shipped unit; without the variable SIGUSR2 keeps its default action. */
#define TEST_HANG_ENV "WBTUNED_TEST_HANG"

static int on_test_hang(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        log_warning("SIGUSR2 and %s=sigusr2: hanging on purpose (a test); only the watchdog or SIGKILL ends this.",
                    TEST_HANG_ENV);
        for (;;)
                pause();
        return 0;
}

static int arm_test_hang(manager *m) {
        const char *v = getenv(TEST_HANG_ENV);
        sigset_t mask;
        int r;

        if (!v)
                return 0;
        if (strcmp(v, "sigusr2") != 0) {
                log_warning("Ignoring %s=%s: the only value is \"sigusr2\" (a test hook).", TEST_HANG_ENV, v);
                return 0;
        }
        sigemptyset(&mask);
        sigaddset(&mask, SIGUSR2);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "Failed to block SIGUSR2 for %s: %m", TEST_HANG_ENV);
        r = sd_event_add_signal(m->event, NULL, SIGUSR2, on_test_hang, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch SIGUSR2 for %s: %m", TEST_HANG_ENV);
        log_warning("%s=sigusr2: SIGUSR2 will hang this daemon (a test hook, never for production).", TEST_HANG_ENV);
        return 0;
}

int main(int argc, char *argv[]) {
        manager_options opts = {};
        manager *m = NULL;
        config cfg;
        int r;

        log_open();
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? 2 : 0;
        if (arg_inspect_saved)
                return inspect_saved(arg_inspect_saved);

        config_init(&cfg);
        r = config_load(arg_config, &cfg, arg_check_config ? stderr : NULL);
        if (arg_check_config) {
                if (r < 0)
                        return 1;
                config_dump(&cfg, stdout);
                return 0;
        }
        if (r < 0) {
                log_error_errno(r, "Cannot start: the configuration %s is not valid.", arg_config);
                return 1;
        }
        log_set_max_level(cfg.log_level);

        if (check_prerequisites() < 0)
                return 1;
        drop_realtime_priority();

        opts = (manager_options) {
                .config_path = arg_config,
                .root = arg_root,
                .socket_path = arg_socket,
                .state_dir = arg_state_dir,
                .speeds_dir = arg_speeds_dir,
                .dry_run = arg_dry_run,
                /* print what we see only when run by hand: not under systemd */
                .print_ticks = !arg_quiet && !getenv("JOURNAL_STREAM") && !getenv("NOTIFY_SOCKET"),
        };
        r = manager_new(&opts, &cfg, &m);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate the manager: %m"), 1;
        r = manager_start(m);
        if (r >= 0) {
                (void) arm_test_hang(m);    /* a test hook that fails to arm must not stop the daemon */
                r = manager_run(m);
        }
        manager_free(m);
        log_info("Stopped.");
        return r < 0 ? 1 : 0;
}
