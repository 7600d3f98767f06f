/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
/* Unit tests for ctl-format.c: wbtunectl's human output from hand-written reply objects. */
#include "ctl-format.h"
#include "ctl-plot.h"
#include "ctl-table.h"
#include "ctl-wait.h"
#include "explain.h"
#include "observe.h"
#include "protocol.h"
#include "report.h"
#include "support.h"
#include "util.h"
#include "tap.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Run a formatter into a string. */
static char *render(int (*format)(json_object *, FILE *), json_object *o, int *ret) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        *ret = format(o, f);
        fclose(f);
        return buf;
}

static const char *device_a =
        "{\"bdi\":\"7:3\",\"has_devnum\":true,\"major\":7,\"minor\":3,\"name\":\"loop3\",\"fstype\":\"ext4\","
        "\"mounts\":[\"/mnt/x\",\"/mnt/y\",\"/mnt/z\"],\"model\":\"\",\"traits\":[\"rotational\",\"usb\"],"
        "\"knobs\":{\"min_ratio\":0,\"max_ratio\":100,\"min_ratio_fine\":0,\"max_ratio_fine\":1000000,"
        "\"min_bytes\":0,\"max_bytes\":419430400,\"strict_limit\":0},"
        "\"source\":\"debugfs\",\"dirty_bytes\":12582912,\"writeback_bytes\":0,\"thresh_bytes\":104857600,"
        "\"dirtied_total_bytes\":1073741824,\"written_total_bytes\":1048576,\"kernel_bw_bytes_per_s\":0,"
        "\"wb_bw_bytes_per_s\":8388608,\"write_bw_bytes_per_s\":1000,\"dirty_rate_bytes_per_s\":0,"
        "\"backlog_bytes\":12582912,\"backlog_s\":1.5,\"seen_before\":true,\"future_field\":7,"
        "\"tuning\":{\"managed\":true,\"active\":true,\"bw_estimate_bytes_per_s\":4194304,\"bw_source\":\"remembered\","
        "\"bw_remembered_age_s\":10800,\"knobs\":[]}}";

/* An NFS-like BDI: no devnum, no mounts listed, old kernel knobs only, bandwidth unknown. */
static const char *device_b =
        "{\"bdi\":\"0:52\",\"has_devnum\":false,\"name\":\"nfs 0:52\",\"fstype\":\"\",\"mounts\":[],"
        "\"model\":\"\",\"traits\":[],\"knobs\":{\"min_ratio\":2,\"max_ratio\":50,\"strict_limit\":1},"
        "\"source\":\"blockstat\",\"dirty_bytes\":0,\"writeback_bytes\":2048,\"thresh_bytes\":0,"
        "\"kernel_bw_bytes_per_s\":0,\"wb_bw_bytes_per_s\":0,\"write_bw_bytes_per_s\":0,"
        "\"backlog_bytes\":2048,\"backlog_s\":0}";

static void test_knobs(void) {
        char buf[128];
        json_object *k;

        k = json_tokener_parse("{\"min_ratio\":0,\"max_ratio\":100,\"min_ratio_fine\":0,\"max_ratio_fine\":1000000,"
                               "\"min_bytes\":0,\"max_bytes\":419430400,\"strict_limit\":0}");
        CHECK_STREQ(ctl_format_knobs(k, buf, sizeof buf), "max 100% strict 0");
        json_object_put(k);

        k = json_tokener_parse("{\"min_ratio\":1,\"max_ratio\":12,\"min_ratio_fine\":15000,\"max_ratio_fine\":125000,"
                               "\"min_bytes\":1048576,\"max_bytes\":268435456,\"strict_limit\":1}");
        CHECK_STREQ(ctl_format_knobs(k, buf, sizeof buf), "min 1.5% max 256M (12.5%) strict 1");
        json_object_put(k);

        /* Kernels before the _fine and _bytes files. */
        k = json_tokener_parse("{\"min_ratio\":2,\"max_ratio\":50}");
        CHECK_STREQ(ctl_format_knobs(k, buf, sizeof buf), "min 2% max 50%");
        json_object_put(k);

        k = json_tokener_parse("{}");
        CHECK_STREQ(ctl_format_knobs(k, buf, sizeof buf), "");
        json_object_put(k);

        /* Truncation stays NUL-terminated. */
        k = json_tokener_parse("{\"max_ratio\":50,\"strict_limit\":1}");
        CHECK_STREQ(ctl_format_knobs(k, buf, 8), "max 50%");
        json_object_put(k);
}

/* One bandwidth everywhere: the policy's estimate (the tuning's), whatever the kernel's figures say. */
static void test_bw(void) {
        json_object *d = json_tokener_parse(device_a);

        CHECK_EQ_U64(ctl_device_bw(d), 4194304);   /* not wb_bw (8M), kernel_bw (0) or write_bw (1000) */
        json_object_object_add(d, "wb_bw_bytes_per_s", json_object_new_uint64(0));
        CHECK_EQ_U64(ctl_device_bw(d), 4194304);
        json_object_object_del(d, "tuning");
        CHECK_EQ_U64(ctl_device_bw(d), 0);         /* no tuning: not known, never another figure */
        json_object_put(d);

        {
                unsigned n = 0;
                CHECK(ctl_parse_possible_cpus("0-1\n", &n) == 0 && n == 2);
                CHECK(ctl_parse_possible_cpus("0", &n) == 0 && n == 1);
                CHECK(ctl_parse_possible_cpus("0,2-5,7", &n) == 0 && n == 8);
                CHECK(ctl_parse_possible_cpus("", &n) == -EINVAL);
                CHECK(ctl_parse_possible_cpus("3-1", &n) == -EINVAL);
                CHECK(ctl_parse_possible_cpus("0-x", &n) == -EINVAL);
                /* 2 CPUs: batch 16 pages x 2 CPUs, two counters; 64 CPUs: batch 56 x 64 x 2 */
                CHECK_EQ_U64(ctl_counter_error_bytes(2, 4096), 2 * 2 * 16 * 4096);
                CHECK_EQ_U64(ctl_counter_error_bytes(64, 4096), 2 * 64 * 56 * 4096);
                CHECK_EQ_U64(ctl_counter_error_bytes(1, 4096), 2 * 4096);
                /* the 12 KiB a clean loop device kept reading on this 2-CPU VM is within it */
                CHECK(12288 <= ctl_counter_error_bytes(2, 4096));
        }
        CHECK(ctl_clean_in_s(0, 0) == 0.0);
        CHECK(ctl_clean_in_s(0, 1000) == 0.0);
        CHECK(ctl_clean_in_s(1000, 0) == -1.0);
        CHECK(ctl_clean_in_s(12582912, 4194304) == 3.0);
}

static void test_bw_source(void) {
        char buf[64];

        CHECK_STREQ(ctl_bw_source_text("measured", false, 0, buf, sizeof buf), "measured now");
        CHECK_STREQ(ctl_bw_source_text("presumed", false, 0, buf, sizeof buf), "presumed");
        CHECK_STREQ(ctl_bw_source_text("remembered", true, 45, buf, sizeof buf), "remembered (age 45 s)");
        CHECK_STREQ(ctl_bw_source_text("remembered", true, 600, buf, sizeof buf), "remembered (age 10 min)");
        CHECK_STREQ(ctl_bw_source_text("remembered", true, 3 * 3600 + 5, buf, sizeof buf), "remembered (age 3 h)");
        CHECK_STREQ(ctl_bw_source_text("remembered", true, 9 * 86400, buf, sizeof buf), "remembered (age 9 d)");
        CHECK_STREQ(ctl_bw_source_text("remembered", false, 0, buf, sizeof buf), "remembered");
        /* a daemon before the field: said so, not taken for presumed */
        CHECK_STREQ(ctl_bw_source_text(NULL, false, 0, buf, sizeof buf), "-");
        CHECK_STREQ(ctl_bw_source_text("guessed\x1b[2J", false, 0, buf, sizeof buf), "guessed\\x1b[2J");
}

static void test_devices(void) {
        char *text;
        int r;

        json_object *result = json_object_new_object(), *a = json_object_new_array();
        json_object_array_add(a, json_tokener_parse(device_a));
        json_object_array_add(a, json_tokener_parse(device_b));
        json_object_object_add(result, "devices", a);

        text = render(ctl_format_devices, result, &r);
        CHECK(r == 0);
        CHECK_STREQ(text,
"BDI   NAME      MOUNTS     FS    TRAITS          DIRTY    WB  THRESH      BW  BW FROM               CLEAN IN  KNOBS\n"
"7:3   loop3     /mnt/x +2  ext4  rotational,usb    12M     0    100M  4.0M/s  remembered (age 3 h)      3.0s  max 100% strict 0\n"
"0:52  nfs 0:52  -          -     -                   0  2.0K       0     0/s  -                            ?  min 2% max 50% strict 1\n");
        free(text);
        json_object_put(result);

        /* No devices: just the header. */
        result = json_tokener_parse("{\"devices\":[]}");
        text = render(ctl_format_devices, result, &r);
        CHECK_STREQ(text, "BDI  NAME  MOUNTS  FS  TRAITS  DIRTY  WB  THRESH  BW  BW FROM  CLEAN IN  KNOBS\n");
        free(text);
        json_object_put(result);

        /* a device-mapper volume shows its mapper name too */
        result = json_tokener_parse("{\"devices\":[{\"bdi\":\"253:0\",\"name\":\"dm-0\",\"alias\":\"vg0-root\","
                                    "\"mounts\":[],\"traits\":[],\"knobs\":{}}]}");
        text = render(ctl_format_devices, result, &r);
        CHECK(r == 0 && text && strstr(text, "\n253:0  dm-0 (vg0-root)  ") != NULL);
        free(text);
        json_object_put(result);

        result = json_tokener_parse("{\"nodevices\":1}");
        text = render(ctl_format_devices, result, &r);
        CHECK(r == -EBADMSG);
        free(text);
        json_object_put(result);
}

static void test_device(void) {
        json_object *d = json_tokener_parse(device_a);
        int r;
        char *text = render(ctl_format_device, d, &r);

        CHECK(r == 0);
        CHECK_STREQ(text,
"                BDI: 7:3\n"
"               Name: loop3\n"
"              Major: 7\n"
"              Minor: 3\n"
"              Model: -\n"
"         Filesystem: ext4\n"
"             Mounts: /mnt/x, /mnt/y, /mnt/z\n"
"             Traits: rotational, usb\n"
"       Stats source: debugfs\n"
"              Dirty: 12M (12582912 bytes)\n"
"          Writeback: 0\n"
"    Dirty threshold: 100M (104857600 bytes)\n"
"            Backlog: 12M (12582912 bytes)\n"
"          Bandwidth: 4.0M/s (the policy's estimate; the kernel's 8.0M/s, 0/s now; measured 1000/s)\n"
"           Clean in: 3.0s at 4.0M/s\n"
"         Dirty rate: 0/s\n"
"      Dirtied total: 1.0G (1073741824 bytes)\n"
"      Written total: 1.0M (1048576 bytes)\n"
"        Rates valid: yes\n"
"     Knob min_ratio: 0%\n"
"     Knob max_ratio: 100%\n"
"Knob min_ratio_fine: 0% (0 ppm)\n"
"Knob max_ratio_fine: 100% (1000000 ppm)\n"
"     Knob min_bytes: 0\n"
"     Knob max_bytes: 400M (419430400 bytes)\n"
"  Knob strict_limit: 0\n"
"       future_field: 7\n"
"\n"
"Tuning: managed, active, bandwidth taken as 4.0M/s, remembered (age 3 h)\n"
"No knob.\n");
        free(text);
        json_object_put(d);

        text = render(ctl_format_device, NULL, &r);
        CHECK(r == -EBADMSG);
        free(text);
}

static void test_status(void) {
        json_object *o = json_tokener_parse(
                "{\"package_version\":\"0.1.0\",\"pid\":42,\"uptime_s\":3725.5,\"ticks\":7,\"mode\":\"observe\",\"tick_ms\":1000,"
                "\"dry_run\":true,\"debugfs\":true,\"stats_source\":\"debugfs\",\"n_devices\":10,"
                "\"config\":\"/etc/wbtuned.conf\",\"global\":{\"dirty_bytes\":1048576,\"writeback_bytes\":0,"
                "\"dirty_thresh_bytes\":419430400,\"background_thresh_bytes\":209715200,"
                "\"dirtied_total_bytes\":2147483648,\"written_total_bytes\":1073741824,"
                "\"mem_total_bytes\":25769803776,\"mem_available_bytes\":24696061952,"
                "\"dirty_rate_bytes_per_s\":104857600,\"write_rate_bytes_per_s\":512,"
                "\"knobs\":{\"dirty_bytes\":0,\"dirty_background_bytes\":209715200,\"dirty_ratio\":20,"
                "\"dirty_background_ratio\":0,\"dirty_writeback_centisecs\":500,\"dirty_expire_centisecs\":3000}}}");
        int r;
        char *text = render(ctl_format_status, o, &r);

        CHECK(r == 0);
        CHECK_STREQ(text,
"         Version: 0.1.0 (protocol 2)\n"
"             PID: 42\n"
"          Uptime: 1h 2min\n"
"            Mode: observe (dry run)\n"
"            Tick: 1000 ms\n"
"           Ticks: 7\n"
"    Stats source: debugfs\n"
"         Devices: 10\n"
"          Config: /etc/wbtuned.conf\n"
"           Dirty: 1.0M\n"
"       Writeback: 0\n"
"      Thresholds: 400M throttle, 200M background\n"
"           Rates: 100M/s dirtied, 512/s written\n"
"          Totals: 2.0G dirtied, 1.0G written\n"
"          Memory: 23G available of 24G\n"
"     Dirty limit: 20% of dirtyable memory (vm.dirty_ratio; vm.dirty_bytes unset)\n"
"Background limit: 200M (vm.dirty_background_bytes; vm.dirty_background_ratio unused)\n"
"  Flusher wakeup: every 5.00s (vm.dirty_writeback_centisecs=500)\n"
"    Dirty expire: after 30.00s (vm.dirty_expire_centisecs=3000)\n");
        free(text);
        json_object_put(o);

        o = json_tokener_parse("{\"devices\":[]}");
        text = render(ctl_format_status, o, &r);
        CHECK(r == -EBADMSG);
        free(text);
        json_object_put(o);
}

/* issue 23 row 11: tests/fake/linux-6.1 (Debian 12's kernel: no *_bytes, *_fine, strict_limit, wb_stats;
 * cgroup v2 writeback): status says what is really written, explain names the file that exists. */
static void test_linux_6_1(void) {
        const char *srcdir = getenv("top_srcdir");
        char dir[4096], copy[] = "/tmp/test-ctl-format-6.1.XXXXXX", cmd[8400], what[96], why[400];
        _cleanup_free_ char *text = NULL, *explained = NULL;
        observe_ctx *ctx = NULL;
        kernel_support ks;
        sample s = {};
        size_t size = 0;
        FILE *f;
        int r;

        snprintf(dir, sizeof dir, "%s/tests/fake/linux-6.1", srcdir ? srcdir : "..");
        if (access(dir, F_OK) < 0) {
                printf("# skipping linux-6.1, %s not found (set top_srcdir)\n", dir);
                return;
        }
        CHECK(mkdtemp(copy) != NULL);
        snprintf(cmd, sizeof cmd, "cp -r '%s/.' '%s/'", dir, copy);
        CHECK(system(cmd) == 0);
        CHECK(observe_new(copy, false, &ctx) == 0);
        CHECK(observe_sample_at(ctx, 5, &s) == 0);
        CHECK(support_probe(copy, &s, &ks) == 0);
        s.support = ks;
        CHECK(ks.debugfs && !ks.wb_stats && !ks.bdi_bytes && !ks.strict_limit && ks.cgroup_writeback);
        CHECK(!ks.devices_trusted);

        printf("# 6.1: status says what the daemon really writes\n");
        CHECK(support_limited(&ks, what, sizeof what, why, sizeof why));
        CHECK_STREQ(what, "flusher intervals only");
        {
                report_writes w = { .enabled = true, .reason = "auto: knobs are written", .saved_file = "/run/wbtuned/saved",
                                    .limited_to = what, .limited_why = why };
                json_object *o = json_tokener_parse(
                        "{\"package_version\":\"0.1.0\",\"pid\":42,\"uptime_s\":5,\"ticks\":7,\"mode\":\"auto\",\"tick_ms\":1000,"
                        "\"dry_run\":false,\"debugfs\":true,\"stats_source\":\"debugfs\",\"n_devices\":1,"
                        "\"config\":\"/etc/wbtuned.conf\",\"global\":{\"dirty_bytes\":0}}");

                json_object_object_add(o, "writes", report_writes_json(&w));
                text = render(ctl_format_status, o, &r);
                CHECK(r == 0);
                printf("%s", text);
                CHECK(strstr(text, "Mode: auto, on this kernel: flusher intervals only\n"));
                CHECK(strstr(text, "Knob writes: limited: flusher intervals only: the per-device statistics show only "
                                   "the root cgroup's writeback"));
                CHECK(!strstr(text, "Knob writes: yes"));
                json_object_put(o);
                free(text);

                /* observing: what auto would write */
                w.enabled = false;
                w.reason = "mode = observe in the configuration";
                o = json_tokener_parse("{\"mode\":\"observe\",\"global\":{}}");
                json_object_object_add(o, "writes", report_writes_json(&w));
                text = render(ctl_format_status, o, &r);
                CHECK(r == 0);
                CHECK(strstr(text, "Mode: observe (on this kernel, auto would write flusher intervals only)\n"));
                CHECK(strstr(text, "Knob writes: no: mode = observe in the configuration\n"));
                json_object_put(o);
        }

        printf("# 6.1: explain names max_ratio, the file there is\n");
        {
                device_decision dd = { .managed = true };
                const bdi_device *dev = NULL;

                for (size_t i = 0; i < s.n_devices; i++)
                        if (strcmp(s.devices[i].bdi, "254:0") == 0)
                                dev = &s.devices[i];
                CHECK(dev != NULL);
                snprintf(dd.bdi, sizeof dd.bdi, "254:0");
                f = open_memstream(&explained, &size);
                if (dev && f)
                        CHECK(explain_device_text(f, &s, NULL, dev, &dd, NULL, true, NULL) == 0);
                if (f)
                        fclose(f);
                printf("%s", explained ? explained : "");
                CHECK(explained && strstr(explained, "  max_ratio is 100 % (400M of the limit now): the policy has no opinion"));
                CHECK(explained && strstr(explained, "  min_ratio is 0 % (0 of the limit now)"));
                CHECK(explained && !strstr(explained, "max_bytes is"));
                CHECK(explained && !strstr(explained, "min_bytes is"));
        }
        sample_done(&s);
        observe_free(ctx);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", copy);
        CHECK(system(cmd) == 0);
}

static const char *knob_managed =
        "{\"knob\":\"max_bytes\",\"unit\":\"bytes\",\"supported\":true,\"current\":16777216,\"desired\":16777216,"
        "\"policy\":16777216,\"reason\":\"bandwidth 8.0M/s x 2.0 s target\",\"clamp\":null,"
        "\"original\":{\"file\":\"max_ratio_fine\",\"value\":1000000,\"unit\":\"ppm\"},\"state\":\"managed\",\"note\":null}";

static void test_tuning(void) {
        char *doc = NULL;
        int r;

        CHECK(asprintf(&doc, "{\"knobs\":[%s,"
                       /* the guard lowered what the policy wanted */
                       "{\"knob\":\"dirty_bytes\",\"unit\":\"bytes\",\"supported\":true,\"current\":419430400,"
                       "\"desired\":209715200,\"policy\":104857600,\"reason\":\"sum of bandwidths\","
                       "\"clamp\":\"not below what is dirty now\",\"original\":{\"file\":\"dirty_ratio\",\"value\":20,"
                       "\"unit\":\"percent\"},\"state\":\"managed\",\"note\":null},"
                       "{\"knob\":\"dirty_writeback_centisecs\",\"unit\":\"centisecs\",\"supported\":true,\"current\":500,"
                       "\"desired\":null,\"policy\":null,\"reason\":\"no opinion\",\"clamp\":null,\"original\":null,"
                       "\"state\":\"no-opinion\",\"note\":null},"
                       "{\"knob\":\"strict_limit\",\"unit\":\"bool\",\"supported\":false,\"current\":null,"
                       "\"desired\":null,\"policy\":null,\"reason\":\"this kernel has no such file\",\"clamp\":null,"
                       "\"original\":null,\"state\":\"unsupported\",\"note\":\"no /sys/class/bdi/7:0/strict_limit\"}]}",
                       knob_managed) > 0);
        json_object *k = json_tokener_parse(doc);
        char *text = render(ctl_format_tuning, k, &r);

        CHECK(r == 0);
        CHECK_STREQ(text,
"KNOB                       STATE                     ORIGINAL  CURRENT             DESIRED  REASON\n"
"max_bytes                  managed      100% (max_ratio_fine)      16M                 16M  bandwidth 8.0M/s x 2.0 s target\n"
"dirty_bytes                managed          20% (dirty_ratio)     400M  200M (policy 100M)  sum of bandwidths [guard: not below what is dirty now]\n"
"dirty_writeback_centisecs  no-opinion                       -    5.00s                   -  no opinion\n"
"strict_limit               unsupported                      -        -                   -  this kernel has no such file\n"
"  strict_limit: no /sys/class/bdi/7:0/strict_limit\n");
        free(text);
        free(doc);
        CHECK(ctl_format_tuning(NULL, stdout) == -EBADMSG);
        json_object_put(k);
}

static int top_all(json_object *o, FILE *f) {
        return ctl_format_top(o, 0, f);
}

static int top_one(json_object *o, FILE *f) {
        return ctl_format_top(o, 1, f);
}

static const char *top_json =
        "{\"time_usec\":1,\"tick_ms\":1000,\"ticks\":77,\"mode\":\"observe\","
        "\"global\":{\"dirty_bytes\":104857600,\"writeback_bytes\":8388608,\"dirty_thresh_bytes\":419430400,"
        "\"background_thresh_bytes\":209715200,\"dirty_rate_bytes_per_s\":52428800,\"write_rate_bytes_per_s\":4194304},"
        "\"devices\":[{\"bdi\":\"7:3\",\"name\":\"loop3\",\"dirty_bytes\":16777216,\"writeback_bytes\":1048576,"
        "\"thresh_bytes\":16777216,\"wb_bw_bytes_per_s\":4194304,\"dirty_rate_bytes_per_s\":4194304,"
        "\"backlog_bytes\":17825792,\"backlog_s\":4.25,\"knobs\":{\"max_ratio\":100,\"strict_limit\":1},"
        "\"tuning\":{\"managed\":true,\"active\":true,\"bw_estimate_bytes_per_s\":2097152,\"knobs\":[]},"
        "\"throttle\":{\"pauses\":9,\"pause_ms_per_s\":812.4}}],"
        "\"attribution\":{\"enabled\":true,\"reason\":null,\"trace_instance\":\"wbtuned\",\"taskstats\":true,"
        "\"delayacct\":true,\"tick\":{\"lost_kernel\":3,\"lost_markers\":1,\"dropped_tasks\":0},\"window_usec\":5000000},"
        "\"dirtiers\":[{\"pid\":4242,\"comm\":\"dd\",\"write_bytes_per_s\":4194304,\"cancelled_write_bytes_per_s\":0,"
        "\"bdi\":\"7:3\",\"name\":\"loop3\",\"pause_ms_per_s\":812.4,\"blkio_delay_ms_per_s\":12.6},"
        "{\"pid\":17,\"comm\":\"cp\",\"write_bytes_per_s\":1024,\"cancelled_write_bytes_per_s\":512}],"
        "\"paused\":[{\"pid\":4242,\"comm\":\"dd\",\"bdi\":\"7:3\",\"name\":\"loop3\",\"pauses\":9,"
        "\"max_pause_ms\":120,\"pause_ms_per_s\":812.4,\"task_ratelimit_bytes_per_s\":4194304,"
        "\"task_write_bytes_per_s\":4194304}]}";

static void test_top(void) {
        json_object *o = json_tokener_parse(top_json);
        char *text;
        int r;

        text = render(top_all, o, &r);
        CHECK(r == 0);
        CHECK_STREQ(text,
"wbtuned top - tick 77 every 1000 ms, mode observe\n"
"Dirty 100M  Writeback 8.0M  Threshold 400M  Background 200M  Dirtying 50M/s  Writing 4.0M/s\n"
"Attribution on (trace instance wbtuned, taskstats on, delay accounting on); this tick lost 3 events, dropped 0 tasks\n"
"\n"
"DEVICE  NAME   DIRTY    WB  THRESH      BW  DIRTYING  CLEAN IN  PAUSE ms/s  KNOBS\n"
"7:3     loop3    16M  1.0M     16M  2.0M/s    4.0M/s      8.5s         812  max 100% strict 1\n"
"\n"
"Dirtying most, in the last 5.0s\n"
" PID  COMM   WRITE  CANCELLED  DEVICE       PAUSE ms/s  BLKIO ms/s\n"
"4242  dd    4.0M/s        0/s  loop3 (7:3)         812          13\n"
"  17  cp    1.0K/s      512/s  -                     -           -\n"
"\n"
"Paused most (balance_dirty_pages), in the last 5.0s\n"
" PID  COMM  DEVICE       PAUSE ms/s  PAUSES  MAX ms  RATELIMIT   WRITE  BLKIO ms/s\n"
"4242  dd    loop3 (7:3)         812       9     120     4.0M/s  4.0M/s           -\n");
        free(text);

        /* a row limit for the terminal */
        text = render(top_one, o, &r);
        CHECK(r == 0);
        CHECK(strstr(text, "4242  dd") != NULL);
        CHECK(strstr(text, "  17  cp") == NULL);
        free(text);
        json_object_put(o);

        /* attribution off, nothing active */
        o = json_tokener_parse("{\"ticks\":1,\"tick_ms\":200,\"mode\":\"dry-run\",\"global\":{},\"devices\":[],"
                               "\"attribution\":{\"enabled\":false,\"reason\":\"not on the live system (--root /x)\"},"
                               "\"dirtiers\":[],\"paused\":[]}");
        text = render(top_all, o, &r);
        CHECK(r == 0);
        CHECK(strstr(text, "Attribution off: not on the live system (--root /x)\n") != NULL);
        CHECK(strstr(text, "No device is holding or writing dirty data.\n") != NULL);
        CHECK(strstr(text, "No task dirtied pages this tick.\n") != NULL);   /* no window_usec: the first tick */
        CHECK(strstr(text, "No task was throttled this tick.\n") != NULL);
        free(text);
        json_object_put(o);

        o = json_tokener_parse("{\"devices\":{}}");
        text = render(top_all, o, &r);
        CHECK(r == -EBADMSG);
        free(text);
        json_object_put(o);
}

static void test_status_attribution(void) {
        json_object *o = json_tokener_parse(
                "{\"package_version\":\"0.1.0\",\"global\":{},"
                "\"attribution\":{\"enabled\":false,\"reason\":\"tracefs is missing (no /sys/kernel/tracing)\","
                "\"taskstats\":false,\"taskstats_reason\":\"taskstats needs CAP_NET_ADMIN\",\"delayacct\":false,"
                "\"counters\":{}},"
                "\"history\":{\"minutes\":15,\"ticks\":900,\"devices\":3,\"memory_bytes\":1048576}}");
        char *text;
        int r;

        text = render(ctl_format_status, o, &r);
        CHECK(r == 0);
        CHECK(strstr(text, "     Attribution: off: tracefs is missing (no /sys/kernel/tracing)\n") != NULL);
        CHECK(strstr(text, "       Taskstats: no: taskstats needs CAP_NET_ADMIN\n") != NULL);
        CHECK(strstr(text, "Delay accounting: off (kernel.task_delayacct)\n") != NULL);
        CHECK(strstr(text, "Trace counters") == NULL);
        CHECK(strstr(text, "         History: 15 min kept, 900 ticks of 3 devices held (1.0M)\n") != NULL);
        free(text);
        json_object_put(o);

        o = json_tokener_parse(
                "{\"package_version\":\"0.1.0\",\"global\":{},"
                "\"attribution\":{\"enabled\":true,\"trace_instance\":\"wbtuned\",\"taskstats\":true,\"delayacct\":true,"
                "\"counters\":{\"events\":10,\"lost_kernel\":2,\"lost_markers\":1,\"dropped_tasks\":3,"
                "\"dropped_devices\":0,\"bad_lines\":0,\"budget_hits\":4}}}");
        text = render(ctl_format_status, o, &r);
        CHECK(r == 0);
        CHECK(strstr(text, "Attribution: on (trace instance wbtuned, taskstats on, delay accounting on)\n") != NULL);
        CHECK(strstr(text, "Taskstats: yes (per-task write bytes and block I/O delay)\n") != NULL);
        CHECK(strstr(text, "Trace counters: 10 events, 2 lost by the kernel (1 markers), dropped 3 tasks 0 devices, "
                           "0 bad lines, 4 budget hits\n") != NULL);
        free(text);
        json_object_put(o);
}

/* The envelope and the result are checked against the protocol: a missing field or one of the wrong
 * type is an error that names it, never a 0 read in its place. */
static void test_check_reply(void) {
        static const struct {
                const char *reply;
                protocol_kind kind;
                int r;
                const char *error;
        } cases[] = {
                { "[]", PK_NONE, -EBADMSG, "the reply is not a JSON object" },
                { "{\"ok\":true,\"result\":{}}", PK_NONE, -EPROTONOSUPPORT,
                  "the reply has no protocol \"version\" (a wbtuned older than this wbtunectl?)" },
                { "{\"version\":3,\"ok\":true,\"result\":{}}", PK_NONE, -EPROTONOSUPPORT,
                  "wbtuned speaks protocol version 3, this wbtunectl version 2: use the wbtunectl that came with the running wbtuned" },
                { "{\"version\":\"2\",\"ok\":true,\"result\":{}}", PK_NONE, -EPROTONOSUPPORT,
                  "wbtuned speaks protocol version \"2\", this wbtunectl version 2: use the wbtunectl that came with the running wbtuned" },
                { "{\"version\":2,\"result\":{}}", PK_NONE, -EBADMSG, "ok: missing" },
                { "{\"version\":2,\"ok\":1,\"result\":{}}", PK_NONE, -EBADMSG, "ok: true or false expected, got a number (1)" },
                { "{\"version\":2,\"ok\":true}", PK_NONE, -EBADMSG, "the reply has no \"result\"" },
                { "{\"version\":2,\"ok\":true,\"result\":[]}", PK_NONE, -EBADMSG, "result: an object expected, got an array ([])" },
                { "{\"version\":2,\"ok\":false,\"error\":\"x\"}", PK_NONE, -EBADMSG,
                  "the reply says it failed, without an \"error\" and \"errno\" string" },
                { "{\"version\":2,\"ok\":false,\"error\":\"no device matches 'x'\",\"errno\":\"ENODEV\"}", PK_SHOW, 1, "" },
                { "{\"version\":2,\"ok\":true,\"result\":{}}", PK_NONE, 0, "" },
                { "{\"version\":2,\"ok\":true,\"result\":{}}", PK_SHOW, -EBADMSG, "result.device: missing" },
                { "{\"version\":2,\"ok\":true,\"result\":{\"devices\":[{\"bdi\":5}]}}", PK_DEVICES, -EBADMSG,
                  "result.devices[0].bdi: a string expected, got a number (5)" },
                { "{\"version\":2,\"ok\":true,\"result\":{\"devices\":{}}}", PK_DEVICES, -EBADMSG,
                  "result.devices: an array expected, got an object ({})" },
                { "{\"version\":2,\"ok\":true,\"result\":{\"tick_ms\":-5,\"minutes\":1,\"bdi\":null,\"csv\":\"\"}}",
                  PK_HISTORY_CSV, -EBADMSG, "result.tick_ms: an integer >= 0 expected, got a negative number (-5)" },
                { "{\"version\":2,\"ok\":true,\"result\":{\"tick_ms\":5,\"minutes\":1,\"bdi\":null,\"csv\":\"\"}}",
                  PK_HISTORY_CSV, 0, "" },
                { "{\"version\":2,\"ok\":true,\"result\":{\"tick_ms\":5,\"minutes\":1,\"csv\":\"\"}}",
                  PK_HISTORY_CSV, -EBADMSG, "result.bdi: missing" },
                { "{\"version\":2,\"ok\":true,\"result\":{\"tick_ms\":5.5,\"minutes\":1,\"bdi\":null,\"csv\":\"\"}}",
                  PK_HISTORY_CSV, -EBADMSG, "result.tick_ms: an integer >= 0 expected, got a number (5.5)" },
                { "{\"version\":2,\"ok\":true,\"result\":{\"mode\":null}}", PK_RESTORE, -EBADMSG, "result.mode: is null" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                json_object *reply = json_tokener_parse(cases[i].reply), *result = NULL;
                char error[512] = "";
                int r = ctl_check_reply(reply, cases[i].kind, &result, error, sizeof error);

                CHECK(r == cases[i].r);
                CHECK_STREQ(error, cases[i].error);
                CHECK(r != 0 || result != NULL);
                json_object_put(reply);
        }
}

static int format_top_all(json_object *o, FILE *f) {
        return ctl_format_top(o, 0, f);
}

/* Whatever the JSON, no renderer crashes or reads out of bounds; the sanitizer build checks too
 * (a huge uptime_s once overflowed a float-to-integer conversion). */
static void test_hostile(void) {
        static const char *const docs[] = {
                "{}", "null", "[]", "5", "\"x\"", "true",
                "{\"package_version\":5,\"uptime_s\":1e300,\"pid\":-1,\"global\":{\"knobs\":5},\"tuning\":{\"knobs\":5},"
                "\"attribution\":[],\"history\":\"x\"}",
                "{\"uptime_s\":-1e300,\"global\":{\"knobs\":{\"dirty_bytes\":\"x\",\"dirty_ratio\":1.5e300}}}",
                "{\"uptime_s\":1.7976931348623157e308,\"global\":{},\"tuning\":{\"knobs\":[5,null,{},[],"
                "{\"unit\":\"bytes\",\"current\":-1,\"desired\":1e300,\"policy\":\"x\",\"original\":{\"unit\":5}}]}}",
                "{\"devices\":[5,null,{},[],{\"bdi\":{},\"mounts\":[1,null,{}],\"traits\":\"x\",\"knobs\":[],"
                "\"backlog_s\":1e300,\"alias\":7}]}",
                "{\"devices\":{}}",
                "{\"device\":{\"bdi\":\"x\",\"knobs\":5,\"tuning\":5,\"mounts\":5,\"backlog_s\":\"x\",\"seen_before\":3,"
                "\"major\":{\"a\":1},\"x\":[1,2,{\"y\":null}]}}",
                "{\"device\":5}",
                "{\"text\":5}",
                "{\"text\":\"a\\nb\",\"device\":{\"tuning\":{\"knobs\":{}}},\"tuning\":[]}",
                "{\"global\":{},\"devices\":[{\"throttle\":5}],\"attribution\":{\"enabled\":true,\"tick\":[]},"
                "\"dirtiers\":[5,{\"pid\":-3,\"pause_ms_per_s\":1e308}],\"paused\":{},\"tick_ms\":1e300}",
                "{\"global\":{},\"devices\":[],\"dirtiers\":[{\"blkio_delay_ms_per_s\":-1e308}],"
                "\"paused\":[{\"pause_ms_per_s\":\"x\",\"task_write_bytes_per_s\":1e300}]}",
                "{\"csv\":5}",
                "{\"csv\":\"a,b\\n\\u001b[2J\\n\"}",
        };
        int (*const renderers[])(json_object *, FILE *) = {
                ctl_format_status, ctl_format_devices, ctl_format_device, ctl_format_show, ctl_format_explain,
                format_top_all, ctl_format_history_csv, ctl_format_tuning,
        };
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(docs); i++) {
                json_object *o = json_tokener_parse(docs[i]);

                for (size_t k = 0; k < ELEMENTSOF(renderers); k++) {
                        int r;
                        char *text = render(renderers[k], o, &r);

                        /* nothing raw from the reply reaches the terminal */
                        CHECK(!text || !strchr(text, '\x1b'));
                        free(text);
                        n++;
                }
                char buf[64];
                ctl_format_knobs(o, buf, sizeof buf);
                ctl_format_knobs(o, buf, 1);
                (void) ctl_device_bw(o);
                json_object_put(o);
        }
        CHECK_EQ_U64(n, ELEMENTSOF(docs) * ELEMENTSOF(renderers));

        /* the huge uptime is shown clamped */
        json_object *o = json_tokener_parse("{\"package_version\":\"x\",\"uptime_s\":1e300,\"global\":{}}");
        int r;
        char *text = render(ctl_format_status, o, &r);
        CHECK(r == 0 && strstr(text, "Uptime: 11574074074d 1h\n") != NULL);
        free(text);
        json_object_put(o);
}

/* Names from the daemon come from mountinfo, FUSE, sysfs and comm: escaped everywhere they are printed. */
static void test_escaping(void) {
        json_object *o = json_tokener_parse(
                "{\"devices\":[{\"bdi\":\"7:0\",\"name\":\"l\\u001b[31mx\",\"alias\":\"a\\nb\",\"mounts\":[\"/mnt/caf\\u00e9\\nx\"],"
                "\"fstype\":\"fuse.\\u009b2J\",\"traits\":[\"\\u202e\"],\"knobs\":{}},"
                "{\"bdi\":\"8:0\",\"name\":\"caf\\u00e9\",\"mounts\":[],\"fstype\":\"\",\"traits\":[],\"knobs\":{}}]}");
        int r;
        char *text = render(ctl_format_devices, o, &r);

        CHECK(r == 0);
        CHECK_STREQ(text,
"BDI  NAME                 MOUNTS          FS             TRAITS  DIRTY  WB  THRESH   BW  BW FROM  CLEAN IN  KNOBS\n"
"7:0  l\\x1b[31mx (a\\x0ab)  /mnt/caf\xc3\xa9\\x0ax  fuse.\\u009b2J  \\u202e      0   0       0  0/s  -              0s  -\n"
"8:0  caf\xc3\xa9                 -               -              -           0   0       0  0/s  -              0s  -\n");
        free(text);
        json_object_put(o);

        o = json_tokener_parse("{\"global\":{},\"devices\":[],\"mode\":\"x\\u001b[2J\",\"dirtiers\":[{\"pid\":4,"
                               "\"comm\":\"evil\\u001b]0;title\\u0007\"}],\"paused\":[]}");
        text = render(format_top_all, o, &r);
        CHECK(r == 0 && strstr(text, "mode x\\x1b[2J\n") != NULL);
        CHECK(strstr(text, "evil\\x1b]0;title\\x07") != NULL);
        CHECK(!strchr(text, '\x1b') && !strchr(text, '\x07'));
        free(text);
        json_object_put(o);

        /* a name spelled "\x0a" and one with a newline print unlike; U+061C is escaped like U+202E */
        o = json_tokener_parse("{\"devices\":[{\"bdi\":\"7:0\",\"name\":\"a\\\\x0a\",\"mounts\":[\"/m\\n\"],"
                               "\"fstype\":\"\\u061cext4\",\"traits\":[],\"knobs\":{}}]}");
        text = render(ctl_format_devices, o, &r);
        CHECK(r == 0 && text && strstr(text, "7:0  a\\\\x0a  /m\\x0a  \\u061cext4  ") != NULL);
        CHECK(text && !strstr(text, "\xd8\x9c"));
        free(text);
        json_object_put(o);

        /* explain's text is the daemon's, names escaped there: shown as made, "\" not doubled */
        o = json_tokener_parse("{\"bdi\":\"7:0\",\"text\":\"a\\\\\\\\x0a b\\\\x0a (7:0):\\n  raw \\u001b\\u061c\\n\","
                               "\"device\":{\"bdi\":\"7:0\",\"name\":\"a\\\\x0a\"},\"tuning\":{\"knobs\":[]}}");
        text = render(ctl_format_explain, o, &r);
        CHECK(r == 0 && text && strstr(text, "a\\\\x0a b\\x0a (7:0):\n  raw \\x1b\\u061c\n") == text);
        free(text);
        json_object_put(o);
}

static void test_show_explain(void) {
        char *doc = NULL, *text;
        int r;

        CHECK(asprintf(&doc, "{\"device\":{\"bdi\":\"7:0\",\"name\":\"loop0\",\"tuning\":{\"managed\":true,\"active\":false,"
                       "\"bw_estimate_bytes_per_s\":8388608,\"knobs\":[%s]}}}", knob_managed) > 0);
        json_object *o = json_tokener_parse(doc);
        text = render(ctl_format_show, o, &r);
        CHECK(r == 0);
        CHECK_STREQ(text,
"      BDI: 7:0\n"
"     Name: loop0\n"
"Bandwidth: 8.0M/s (the policy's estimate; the kernel's 0/s, 0/s now; measured 0/s)\n"
"\n"
"Tuning: managed, idle, bandwidth taken as 8.0M/s\n"
"KNOB       STATE                 ORIGINAL  CURRENT  DESIRED  REASON\n"
"max_bytes  managed  100% (max_ratio_fine)      16M      16M  bandwidth 8.0M/s x 2.0 s target\n");
        free(text);
        json_object_put(o);
        free(doc);

        CHECK(asprintf(&doc, "{\"bdi\":\"7:0\",\"text\":\"loop0 (7:0):\\n  It \\u001b[1mholds\\n\",\"device\":{\"bdi\":\"7:0\","
                       "\"name\":\"loop0\",\"tuning\":{\"managed\":true,\"active\":true,\"bw_estimate_bytes_per_s\":1,\"knobs\":[%s]}},"
                       "\"tuning\":{\"knobs\":[]}}", knob_managed) > 0);
        o = json_tokener_parse(doc);
        text = render(ctl_format_explain, o, &r);
        CHECK(r == 0);
        CHECK_STREQ(text,
"loop0 (7:0):\n"
"  It \\x1b[1mholds\n"
"\n"
"Knobs of loop0:\n"
"KNOB       STATE                 ORIGINAL  CURRENT  DESIRED  REASON\n"
"max_bytes  managed  100% (max_ratio_fine)      16M      16M  bandwidth 8.0M/s x 2.0 s target\n"
"\n"
"Global knobs:\n"
"No knob.\n");
        free(text);
        json_object_put(o);
        free(doc);
}

/* plot's -o: gnuplot's "set output '|cmd'" runs cmd, so no name may lead with "|" */
static void test_plot_output(void) {
        static const struct {
                const char *name, *path;
        } cases[] = {
                { "x.png", "./x.png" },
                { "/tmp/x.png", "/tmp/x.png" },
                { "sub/x.png", "./sub/x.png" },
                { " |touch x #.png", "./ |touch x #.png" },
                { "~/x.png", "./~/x.png" },
                { "a'b\"c\nd.png", "./a'b\"c\nd.png" },
                { "|touch /tmp/x #.png", NULL },
                { "|", NULL },
                { "", NULL },
                { NULL, NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *path = NULL;
                const char *why = NULL;
                int r = ctl_plot_output(cases[i].name, &path, &why);

                if (cases[i].path) {
                        CHECK(r == 0);
                        CHECK_STREQ(path, cases[i].path);
                } else
                        CHECK(r == -EINVAL && why && *why && !path);
        }
}

/* plot finds its columns by name: another order, or columns it does not know, change nothing. */
static void test_plot_data(void) {
        static const char *const mib = "1048576";
        char *csv = NULL, *out = NULL, error[256] = "";
        size_t size = 0;
        uint64_t rows = 0;
        FILE *f;

        CHECK(asprintf(&csv, "max_bytes,new_column,dirty_bytes,global_dirty_bytes,time_usec,writeback_bytes,"
                       "write_bw_bytes_per_s,thresh_bytes\n"
                       "0,9,%s,%s0,1000000,0,%s,%s00\n"
                       "bad row\n"
                       "0,9,%s,%s0,3500000,%s,%s,%s00\n", mib, mib, mib, mib, mib, mib, mib, mib, mib) > 0);
        f = open_memstream(&out, &size);
        CHECK(ctl_plot_data(csv, true, f, &rows, error, sizeof error) == 0);
        fclose(f);
        CHECK_EQ_U64(rows, 2);
        CHECK_STREQ(out, "0.000 1.000 0.000 100.000 1.000 10.000\n"
                         "2.500 1.000 1.000 100.000 1.000 10.000\n");
        free(out);

        f = open_memstream(&out, &size);
        CHECK(ctl_plot_data(csv, false, f, &rows, error, sizeof error) == -EBADMSG);
        fclose(f);
        CHECK_STREQ(error, "the history CSV has no \"global_writeback_bytes\" column");
        free(out);
        free(csv);

        f = open_memstream(&out, &size);
        CHECK(ctl_plot_data("", true, f, &rows, error, sizeof error) == -EBADMSG && rows == 0);
        CHECK(ctl_plot_data(NULL, true, f, &rows, error, sizeof error) == -EBADMSG);
        fclose(f);
        CHECK_STREQ(error, "the history CSV has no \"time_usec\" column");
        free(out);
}

/* --no-legend: the rows alone; colour: warnings only, around text already escaped, widths unchanged. */
static void test_style(void) {
        json_object *o = json_tokener_parse("{\"devices\":[{\"bdi\":\"7:0\",\"name\":\"loop0\",\"mounts\":[],\"traits\":[],"
                                            "\"knobs\":{}}]}");
        char *text;
        int r;

        ctl_format_set_style(false, false);
        text = render(ctl_format_devices, o, &r);
        CHECK(r == 0);
        CHECK_STREQ(text, "7:0  loop0  -  -  -  0  0  0  0/s  -  0s  -\n");
        free(text);
        json_object_put(o);

        /* an empty table says nothing without its legend */
        o = json_tokener_parse("{\"global\":{},\"devices\":[],\"attribution\":{\"enabled\":false,\"reason\":\"x\","
                               "\"window_usec\":5000000},\"dirtiers\":[],\"paused\":[]}");
        text = render(top_all, o, &r);
        CHECK(r == 0 && !strstr(text, "No task") && !strstr(text, "PID") && !strstr(text, "No device"));
        free(text);
        json_object_put(o);

        /* colour: an overridden knob's state and untrusted figures, nothing else */
        ctl_format_set_style(true, true);
        o = json_tokener_parse("{\"knobs\":[{\"knob\":\"max_bytes\",\"unit\":\"bytes\",\"current\":1,\"reason\":\"r\","
                               "\"state\":\"override\"},{\"knob\":\"min_bytes\",\"unit\":\"bytes\",\"current\":1,"
                               "\"reason\":\"r\",\"state\":\"managed\"}]}");
        text = render(ctl_format_tuning, o, &r);
        CHECK(r == 0);
        CHECK_STREQ(text,
"KNOB       STATE     ORIGINAL  CURRENT  DESIRED  REASON\n"
"max_bytes  \x1b[1;33moverride\x1b[0m         -        1        -  r\n"
"min_bytes  managed          -        1        -  r\n");
        free(text);
        json_object_put(o);

        o = json_tokener_parse("{\"global\":{},\"kernel_support\":{\"devices_trusted\":false,\"why\":\"evil\\u001b[2J\"},"
                               "\"writes\":{\"enabled\":true,\"failures_total\":0,\"saved_file_refused\":null}}");
        text = render(ctl_format_status, o, &r);
        CHECK(r == 0);
        CHECK(strstr(text, "Device figures: \x1b[1;33mNOT trusted, limits and caps left alone: evil\\x1b[2J\x1b[0m\n") != NULL);
        CHECK(strstr(text, "Written: 0 in the last minute") != NULL && !strstr(text, "Written: \x1b"));
        free(text);
        json_object_put(o);
        ctl_format_set_style(true, false);
}

/* wait's line and JSON object from one reading. */
static void test_wait(void) {
        ctl_wait_state w = {
                .dirty_bytes = 4 << 20, .writeback_bytes = 2 << 20, .max_backlog_bytes = 12 << 20,
                .bw_bytes_per_s = 8 << 20, .elapsed_s = 1.25, .syncing = true, .state = CTL_WAIT_WRITING,
        };
        char buf[512];
        json_object *j;

        CHECK(ctl_wait_done_percent(&w) == 50.0);
        CHECK_STREQ(ctl_format_wait_line(&w, "loop0", true, buf, sizeof buf),
                    "loop0 [##########..........]  50% 6.0M left (dirty 4.0M, writeback 2.0M) at 8.0M/s, clean in 0.8s");
        CHECK_STREQ(ctl_format_wait_line(&w, "sd\x1b[2Jb", false, buf, sizeof buf),
                    "sd\\x1b[2Jb  50% 6.0M left (dirty 4.0M, writeback 2.0M) at 8.0M/s, clean in 0.8s");
        j = ctl_wait_json(&w, "loop0", "7:0");
        CHECK_STREQ(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN),
                    "{\"device\":\"loop0\",\"bdi\":\"7:0\",\"state\":\"writing\",\"dirty_bytes\":4194304,"
                    "\"writeback_bytes\":2097152,\"backlog_bytes\":6291456,\"done_percent\":50.0,"
                    "\"bw_estimate_bytes_per_s\":8388608,\"clean_in_s\":0.8,\"elapsed_s\":1.250,\"syncing\":true}");
        json_object_put(j);

        /* bandwidth not known yet: no ETA, null in JSON */
        w.bw_bytes_per_s = 0;
        CHECK(strstr(ctl_format_wait_line(&w, "loop0", false, buf, sizeof buf), ", bandwidth not known yet") != NULL);
        j = ctl_wait_json(&w, "loop0", "7:0");
        CHECK(json_object_object_get_ex(j, "clean_in_s", NULL) && !json_object_object_get(j, "clean_in_s"));
        json_object_put(j);

        /* clean: 100 %, and the syncfs that still runs is said */
        w = (ctl_wait_state) { .max_backlog_bytes = 1 << 20, .syncing = true, .state = CTL_WAIT_CLEAN };
        CHECK(ctl_wait_done_percent(&w) == 100.0);
        CHECK_STREQ(ctl_format_wait_line(&w, "loop0", true, buf, sizeof buf),
                    "loop0 [####################] 100% 0 left (dirty 0, writeback 0) at 0/s, clean (syncfs still running)");
        /* clean within the counters' error: the line says clean, as the exit status does */
        w = (ctl_wait_state) { .writeback_bytes = 16 << 10, .max_backlog_bytes = 18 << 20, .bw_bytes_per_s = 4 << 20,
                               .state = CTL_WAIT_CLEAN };
        CHECK_STREQ(ctl_format_wait_line(&w, "loop0", false, buf, sizeof buf),
                    "loop0 100% 16K left (dirty 0, writeback 16K) at 4.0M/s, clean");
        /* a backlog that grew past the start is 0 % done, never negative */
        w = (ctl_wait_state) { .dirty_bytes = 3 << 20, .max_backlog_bytes = 3 << 20 };
        CHECK(ctl_wait_done_percent(&w) == 0.0);
}

int main(void) {
        test_check_reply();
        test_hostile();
        test_escaping();
        test_show_explain();
        test_plot_data();
        test_plot_output();
        test_top();
        test_status_attribution();
        test_tuning();
        test_knobs();
        test_bw();
        test_bw_source();
        test_devices();
        test_device();
        test_status();
        test_linux_6_1();
        test_style();
        test_wait();
        TEST_EXIT();
}
