/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the remembered speeds: the file (round trip, every kind of damage, foreign, huge) and
 * device identities read from fake trees. */
#include "speeds.h"
#include "savedfile.h"
#include "util.h"
#include "tap.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

static char dir[PATH_MAX];

static void put(const char *rel, const char *content) {
        char path[PATH_MAX + 256], *slash;
        FILE *f;

        snprintf(path, sizeof path, "%s%s", dir, rel);
        for (slash = strchr(path + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = 0;
                (void) mkdir(path, 0755);
                *slash = '/';
        }
        f = fopen(path, "w");
        CHECK(f != NULL);
        if (f) {
                fputs(content, f);
                fclose(f);
        }
}

static void put_link(const char *rel, const char *target) {
        char path[PATH_MAX + 256];

        put(rel, "");
        snprintf(path, sizeof path, "%s%s", dir, rel);
        unlink(path);
        CHECK(symlink(target, path) == 0);
}

/* A body signed with savedfile.c's checksum line, as speeds_format() would. */
static char *signed_text(const char *body) {
        char line[64], *s;

        saved_file_checksum_line(body, strlen(body), line, sizeof line);
        if (asprintf(&s, "%s%s", body, line) < 0)
                abort();
        return s;
}

/* The file is refused (-EBADMSG) with a reason containing want. */
static void check_refused_n(const char *text, size_t size, const char *want) {
        _cleanup_free_ speed_entry *v = NULL;
        _cleanup_free_ char *why = NULL;
        size_t n = 0;

        CHECK(speeds_parse(text, size, &v, &n, &why) == -EBADMSG);
        CHECK(why && strstr(why, want));
        printf("#   %s\n", why ? why : "(no reason)");
}

static void check_refused(const char *text, const char *want) {
        check_refused_n(text, strlen(text), want);
}

static void test_round_trip(void) {
        speed_entry in[3] = {
                { "wwid:naa.5000c500a1b2c3d4", 150 << 20, 1767225600 },
                { "loop:/srv/stick.img@8:1:1234", 8 << 20, 1767229200 },
                { "nfs:server:/export", 110 << 20, 1 },
        };
        _cleanup_free_ speed_entry *out = NULL;
        _cleanup_free_ char *why = NULL, *text = NULL;
        char path[PATH_MAX + 16];
        size_t n = 0, size = 0;
        struct stat st;

        snprintf(path, sizeof path, "%s/speeds", dir);
        CHECK(speeds_write(path, in, 3) == 0);
        CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644);
        CHECK(speeds_read(path, &out, &n, &why) == 0);
        CHECK_EQ_U64(n, 3);
        for (size_t i = 0; i < 3 && i < n; i++) {
                CHECK_STREQ(out[i].id, in[i].id);
                CHECK_EQ_U64(out[i].bw_bytes_per_s, in[i].bw_bytes_per_s);
                CHECK_EQ_U64(out[i].measured_realtime_s, in[i].measured_realtime_s);
        }
        text = speeds_format(in, 3, &size);
        CHECK(text && strstr(text, "wbtuned-speeds 1\n"));
        /* no temporary file left beside it */
        {
                char tmp[PATH_MAX + 64];
                snprintf(tmp, sizeof tmp, "ls %s | grep -q 'speeds\\.'", dir);
                CHECK(system(tmp) != 0);
        }
        /* an empty store is a valid file too */
        CHECK(speeds_write(path, NULL, 0) == 0);
        free(out);
        out = NULL;
        CHECK(speeds_read(path, &out, &n, NULL) == 0);
        CHECK_EQ_U64(n, 0);
        unlink(path);
        CHECK(speeds_read(path, &out, &n, NULL) == -ENOENT);
}

static void test_corrupt(void) {
        speed_entry in[1] = { { "serial:Stick:4C530001", 8 << 20, 1767225600 } };
        _cleanup_free_ char *good = NULL;
        size_t size = 0;

        good = speeds_format(in, 1, &size);
        CHECK(good != NULL);
        printf("# corrupt files are refused, each with its reason\n");
        {
                /* one digit changed after the checksum was computed */
                _cleanup_free_ char *bad = xstrdup(good);
                char *p = strstr(bad, "speed 8");
                CHECK(p != NULL);
                if (p)
                        p[6] = '9';
                check_refused(bad, "checksum mismatch");
        }
        {
                _cleanup_free_ char *bad = signed_text("wbtuned-speeds 2\nspeed 1 2 wwid:x\n");
                check_refused(bad, "version 2");
        }
        {
                /* cut short: the last line unterminated, or no checksum line at all */
                _cleanup_free_ char *bad = strndup(good, size - 5);
                check_refused(bad, "not terminated");
                check_refused("wbtuned-speeds 1\nspeed 1 2 wwid:x\n", "no checksum line");
        }
        {
                _cleanup_free_ char *a = signed_text("wbtuned-speeds 1\nspeed 12x 2 wwid:x\n"),
                        *b = signed_text("wbtuned-speeds 1\nspeed 0 2 wwid:x\n"),
                        *c = signed_text("wbtuned-speeds 1\nspeed 99999999999999999999999 2 wwid:x\n"),
                        *c2 = signed_text("wbtuned-speeds 1\nspeed 1099511627777 2 wwid:x\n"),
                        *d = signed_text("wbtuned-speeds 1\nspeed 1 -2 wwid:x\n"),
                        *e = signed_text("wbtuned-speeds 1\nspeed 1 2 nocolon\n"),
                        *f = signed_text("wbtuned-speeds 1\nspeed 1 2 wwid:x\nspeed 3 4 wwid:x\n"),
                        *g = signed_text("wbtuned-speeds 1\nspeed 1 2\n");
                check_refused(a, "bad speed");
                check_refused(b, "bad speed");
                check_refused(c, "bad speed");
                check_refused(c2, "bad speed");   /* over 1 TiB/s */
                check_refused(d, "bad time");
                check_refused(e, "bad device identity");
                check_refused(f, "listed twice");
                check_refused(g, "expected \"speed");
        }
        check_refused_n("\0wbtuned-speeds 1\n", 18, "NUL");
        {
                /* the reason quotes the file's bytes: a terminal escape in them is shown escaped */
                _cleanup_free_ char *bad = signed_text("wbtuned-speeds 1\nspeed 8\033]0;owned\007 2 wwid:x\n");
                check_refused(bad, "bad speed \"8\\x1b]0;owned\\x07\"");
        }
}

static void test_foreign(void) {
        _cleanup_free_ char *saved = signed_text("wbtuned-saved 2\nglobal dirty_bytes original dirty_ratio 20\n"),
                *other = signed_text("hello world\n");

        printf("# a foreign file (another magic) is refused\n");
        check_refused(saved, "not a speeds file");
        check_refused(other, "not a speeds file");
        check_refused("", "no \"wbtuned-speeds\" version line");
}

static void test_huge(void) {
        char path[PATH_MAX + 16];
        _cleanup_free_ speed_entry *v = NULL;
        _cleanup_free_ char *why = NULL;
        size_t n = 0;
        struct timespec a, b;
        int fd;

        printf("# a file over the bound is refused from its size, without reading it\n");
        snprintf(path, sizeof path, "%s/huge", dir);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        CHECK(fd >= 0);
        if (fd >= 0) {
                CHECK(ftruncate(fd, (off_t) 1 << 40) == 0);   /* 1 TiB, sparse */
                close(fd);
        }
        clock_gettime(CLOCK_MONOTONIC, &a);
        CHECK(speeds_read(path, &v, &n, &why) == -EBADMSG);
        clock_gettime(CLOCK_MONOTONIC, &b);
        CHECK(why && strstr(why, "larger than"));
        CHECK((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < 100);
        unlink(path);

        printf("# more entries than the bound are refused\n");
        {
                _cleanup_free_ char *body = NULL, *text = NULL;
                size_t size = 0;
                FILE *f = open_memstream(&body, &size);

                CHECK(f != NULL);
                if (!f)
                        return;
                fputs("wbtuned-speeds 1\n", f);
                for (int i = 0; i <= SPEEDS_MAX_ENTRIES; i++)
                        fprintf(f, "speed 1 2 wwid:%d\n", i);
                fclose(f);
                text = signed_text(body);
                check_refused(text, "more than");
        }
        /* and the store never grows past it: the oldest measurement makes room */
        {
                _cleanup_free_ speed_entry *s = NULL;
                size_t ns = 0, alloc = 0;
                char id[32];

                for (int i = 0; i < SPEEDS_MAX_ENTRIES + 5; i++) {
                        snprintf(id, sizeof id, "wwid:%d", i);
                        CHECK(speeds_update(&s, &ns, &alloc, id, 1 << 20, 1000 + (uint64_t) i) == 1);
                }
                CHECK_EQ_U64(ns, SPEEDS_MAX_ENTRIES);
                CHECK(speeds_find(s, ns, "wwid:0") == NULL);
                CHECK(speeds_find(s, ns, "wwid:1028") != NULL);
                /* a small change is not notable, a 25 % one is */
                CHECK(speeds_update(&s, &ns, &alloc, "wwid:1028", (1 << 20) + 1000, 5000) == 0);
                CHECK(speeds_update(&s, &ns, &alloc, "wwid:1028", (1 << 20) / 4 * 5, 5000) == 1);
        }
}

static void dev(bdi_device *d, const char *bdi, const char *name, unsigned major, unsigned minor) {
        *d = (bdi_device) { .major = major, .minor = minor, .has_devnum = true };
        snprintf(d->bdi, sizeof d->bdi, "%s", bdi);
        snprintf(d->name, sizeof d->name, "%s", name);
}

static void check_identity(const bdi_device *d, int want_r, const char *want) {
        char id[SPEEDS_ID_MAX] = "";
        int r = speeds_identity(dir, d, id, sizeof id);

        CHECK(r == want_r);
        if (want)
                CHECK_STREQ(id, want);
        printf("#   %s (%s): %s\n", d->bdi, d->name, r == 0 ? id : strerror(-r));
}

static void test_identity(void) {
        bdi_device d;
        char img[PATH_MAX + 32], want[PATH_MAX + 128];
        struct stat st;

        printf("# identities from a fake tree\n");
        /* a SATA disk: its wwid, before its serial */
        put("/sys/block/sda/device/wwid", "naa.5000c500a1b2c3d4\n");
        put("/sys/block/sda/device/serial", "Z1D2\n");
        dev(&d, "8:0", "sda", 8, 0);
        check_identity(&d, 0, "wwid:naa.5000c500a1b2c3d4");
        /* a USB stick: its serial with its model (serials alone are not unique across vendors) */
        put("/sys/block/sdb/device/serial", "  4C530001 \n");
        dev(&d, "8:16", "sdb", 8, 16);
        snprintf(d.model, sizeof d.model, "Cruzer Blade");
        check_identity(&d, 0, "serial:Cruzer%20Blade:4C530001");
        /* a loop device: its backing file, with the file's dev:inode when it is reachable */
        snprintf(img, sizeof img, "%s/srv/stick.img", dir);
        put("/srv/stick.img", "x");
        put("/sys/block/loop3/loop/backing_file", "/srv/stick.img\n");
        CHECK(stat(img, &st) == 0);
        snprintf(want, sizeof want, "loop:/srv/stick.img@%u:%u:%llu", major(st.st_dev), minor(st.st_dev),
                 (unsigned long long) st.st_ino);
        dev(&d, "7:3", "loop3", 7, 3);
        check_identity(&d, 0, want);
        /* ... or the path alone when it is not */
        put("/sys/block/loop4/loop/backing_file", "/gone/disk image.raw (deleted)\n");
        dev(&d, "7:4", "loop4", 7, 4);
        check_identity(&d, 0, "loop:/gone/disk%20image.raw%20(deleted)");
        /* an NFS mount: server:export from mountinfo */
        put("/proc/self/mountinfo",
            "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
            "40 22 0:52 / /mnt/nfs rw,relatime shared:20 - nfs4 fileserver:/export/home rw,vers=4.2\n");
        dev(&d, "0:52", "nfs 0:52", 0, 52);
        d.traits = BDI_TRAIT_NFS;
        check_identity(&d, 0, "nfs:fileserver:/export/home");
        dev(&d, "0:53", "nfs 0:53", 0, 53);
        d.traits = BDI_TRAIT_NFS;
        check_identity(&d, -ENOENT, NULL);
        /* the fallback: the filesystem uuid of the whole device */
        put_link("/dev/disk/by-uuid/0b7c8e1a-1111-2222-3333-444455556666", "../../vdb");
        put_link("/dev/disk/by-uuid/9999", "../../vdb1");
        dev(&d, "254:16", "vdb", 254, 16);
        check_identity(&d, 0, "uuid:0b7c8e1a-1111-2222-3333-444455556666");
        /* a btrfs BDI: the fs uuid whose bdi links to it */
        put_link("/sys/fs/btrfs/5d3c1f2e-aaaa/bdi", "../../../devices/virtual/bdi/btrfs-1");
        d = (bdi_device) {};
        snprintf(d.bdi, sizeof d.bdi, "btrfs-1");
        check_identity(&d, 0, "uuid:5d3c1f2e-aaaa");
        /* nothing stable: not remembered */
        dev(&d, "254:32", "vdc", 254, 32);
        check_identity(&d, -ENOENT, NULL);
        dev(&d, "0:60", "fuse 0:60", 0, 60);
        d.traits = BDI_TRAIT_FUSE;
        check_identity(&d, -ENOENT, NULL);
        /* a name that would leave /sys/block is never looked up */
        dev(&d, "8:32", "../sda", 8, 32);
        check_identity(&d, -ENOENT, NULL);
}

/* The store: a refused file is logged and ignored, a measured speed is remembered across a restart. */
static void test_store(void) {
        char path[PATH_MAX + 16];
        speeds_store *st = NULL;
        bdi_device devs[1];
        sample s = { .devices = devs, .n_devices = 1, .time_usec = 1000000, .realtime_usec = 1767225600ULL * 1000000 };
        device_decision dd = { .bdi = "8:0", .managed = true, .active = true, .bw_bytes_per_s = 8 << 20,
                               .bw_source = SPEED_MEASURED };
        decision d = { .devices = &dd, .n_devices = 1 };

        snprintf(path, sizeof path, "%s/store", dir);
        put("/store", "garbage\n");
        CHECK(speeds_store_new(dir, path, true, &st) == 0);
        CHECK_EQ_U64(speeds_store_size(st), 0);
        dev(&devs[0], "8:0", "sda", 8, 0);
        speeds_store_prior(st, &s);
        CHECK_EQ_U64(devs[0].remembered_bw_bytes_per_s, 0);
        speeds_store_learn(st, &s, &d);   /* the first notable change is saved at once */
        CHECK_EQ_U64(speeds_store_size(st), 1);
        st = speeds_store_free(st);

        CHECK(speeds_store_new(dir, path, true, &st) == 0);
        CHECK_EQ_U64(speeds_store_size(st), 1);
        s.realtime_usec += 3 * 3600 * 1000000ULL;
        speeds_store_prior(st, &s);
        CHECK_EQ_U64(devs[0].remembered_bw_bytes_per_s, 8 << 20);
        CHECK_EQ_U64(devs[0].remembered_age_s, 3 * 3600);
        CHECK(speeds_store_flush(st) == 0);
        st = speeds_store_free(st);
        unlink(path);
}

/* issue 22 item 6: a device that is gone from the sample (unplugged, failed) keeps its remembered speed:
 * entries are kept by identity, not by presence, and the stick is known again when it comes back. */
static void test_gone_device_keeps_its_speed(void) {
        char path[PATH_MAX + 16];
        speeds_store *st = NULL;
        bdi_device devs[1];
        sample s = { .devices = devs, .n_devices = 1, .time_usec = 1000000, .realtime_usec = 1767225600ULL * 1000000 };
        device_decision dd = { .bdi = "8:16", .managed = true, .active = true, .bw_bytes_per_s = 5 << 20,
                               .bw_source = SPEED_MEASURED };
        decision d = { .devices = &dd, .n_devices = 1 };

        snprintf(path, sizeof path, "%s/store-gone", dir);
        CHECK(speeds_store_new(dir, path, false, &st) == 0);
        dev(&devs[0], "8:16", "sdb", 8, 16);
        snprintf(devs[0].model, sizeof devs[0].model, "Cruzer Blade");
        speeds_store_prior(st, &s);
        speeds_store_learn(st, &s, &d);
        CHECK_EQ_U64(speeds_store_size(st), 1);
        /* pulled: ticks without it */
        s.n_devices = d.n_devices = 0;
        for (int n = 0; n < 3; n++) {
                s.time_usec += 40 * 1000000ULL;
                speeds_store_prior(st, &s);
                speeds_store_learn(st, &s, &d);
        }
        CHECK_EQ_U64(speeds_store_size(st), 1);
        /* back, under another bdi: its speed is known before its first write */
        s.n_devices = d.n_devices = 1;
        s.time_usec += 1000000;
        dev(&devs[0], "8:32", "sdb", 8, 32);
        snprintf(devs[0].model, sizeof devs[0].model, "Cruzer Blade");
        speeds_store_prior(st, &s);
        CHECK_EQ_U64(devs[0].remembered_bw_bytes_per_s, 5 << 20);
        st = speeds_store_free(st);
}

/* An NFS mount's bdi can be seen a tick before its mount, and an unmount and a mount again within a few
 * seconds keep its anonymous number (0:48 in the 6.12 guest at 64 CPUs): nameless, with no identity, in
 * between. That empty identity, cached for 30 s by the number, kept the export's speed from being learnt
 * and from the remount. A device whose name or traits changed is looked up again. */
static void test_remount_under_the_same_number(void) {
        char path[PATH_MAX + 16];
        speeds_store *st = NULL;
        bdi_device devs[1];
        sample s = { .devices = devs, .n_devices = 1, .time_usec = 1000000, .realtime_usec = 1767225600ULL * 1000000 };
        device_decision dd = { .bdi = "0:48", .managed = true, .active = true, .bw_bytes_per_s = 36 << 20,
                               .bw_source = SPEED_MEASURED };
        decision d = { .devices = &dd, .n_devices = 1 };

        snprintf(path, sizeof path, "%s/store-remount", dir);
        put("/proc/self/mountinfo",
            "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
            "40 22 0:48 / /mnt/nfs rw,relatime shared:20 - nfs4 127.0.0.1:/srv/wbvm rw,vers=4.2\n");
        CHECK(speeds_store_new(dir, path, false, &st) == 0);
        /* first seen a tick before its mount is in mountinfo: nameless, no identity */
        dev(&devs[0], "0:48", "0:48", 0, 48);
        speeds_store_prior(st, &s);
        s.time_usec += 1000000;
        dev(&devs[0], "0:48", "nfs4 127.0.0.1:/srv/wbvm", 0, 48);
        devs[0].traits = BDI_TRAIT_NFS;
        speeds_store_prior(st, &s);
        speeds_store_learn(st, &s, &d);
        CHECK_EQ_U64(speeds_store_size(st), 1);
        /* unmounted: the bdi lingers a tick, nameless */
        put("/proc/self/mountinfo", "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n");
        s.time_usec += 1000000;
        dev(&devs[0], "0:48", "0:48", 0, 48);
        dd.managed = dd.active = false;
        speeds_store_prior(st, &s);
        CHECK_EQ_U64(devs[0].remembered_bw_bytes_per_s, 0);
        /* mounted again, the same number, 2 s later: known before its first write */
        put("/proc/self/mountinfo",
            "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
            "41 22 0:48 / /mnt/nfs rw,relatime shared:21 - nfs4 127.0.0.1:/srv/wbvm rw,vers=4.2\n");
        s.time_usec += 2000000;
        dev(&devs[0], "0:48", "nfs4 127.0.0.1:/srv/wbvm", 0, 48);
        devs[0].traits = BDI_TRAIT_NFS;
        speeds_store_prior(st, &s);
        CHECK_EQ_U64(devs[0].remembered_bw_bytes_per_s, 36 << 20);
        st = speeds_store_free(st);
}

/* A device's identity is read once in SPEEDS_IDENTITY_MAX_AGE_USEC, whatever its place in the sample: the
 * sample lists devices by number (7:0, 7:1, 253:0), and the cache was searched as if they were in strcmp's
 * order, so 253:0 missed it and had its sysfs files read again every tick (on the host: every
 * idle loop device, 8 opens each a tick). Seen here as a serial changed under a cached identity. */
static void test_identity_cached_in_sample_order(void) {
        char path[PATH_MAX + 16];
        speeds_store *st = NULL;
        bdi_device devs[3];
        sample s = { .devices = devs, .n_devices = 3, .time_usec = 1000000, .realtime_usec = 1767225600ULL * 1000000 };
        device_decision dd[3] = {
                { .bdi = "7:0" }, { .bdi = "7:1" },
                { .bdi = "253:0", .managed = true, .active = true, .bw_bytes_per_s = 9 << 20, .bw_source = SPEED_MEASURED },
        };
        decision d = { .devices = dd, .n_devices = 3 };

        snprintf(path, sizeof path, "%s/store-order", dir);
        put("/sys/block/loop0/loop/backing_file", "/img0\n");
        put("/sys/block/loop1/loop/backing_file", "/img1\n");
        put("/sys/block/vdd/serial", "S1\n");
        CHECK(speeds_store_new(dir, path, false, &st) == 0);
        dev(&devs[0], "7:0", "loop0", 7, 0);
        dev(&devs[1], "7:1", "loop1", 7, 1);
        dev(&devs[2], "253:0", "vdd", 253, 0);
        speeds_store_prior(st, &s);
        speeds_store_learn(st, &s, &d);
        CHECK_EQ_U64(speeds_store_size(st), 1);
        /* a second later, the serial file says something else: the cached identity still holds */
        put("/sys/block/vdd/serial", "S2\n");
        s.time_usec += 1000000;
        speeds_store_prior(st, &s);
        CHECK_EQ_U64(devs[2].remembered_bw_bytes_per_s, 9 << 20);
        /* after SPEEDS_IDENTITY_MAX_AGE_USEC it is read again: another device, nothing remembered */
        s.time_usec += SPEEDS_IDENTITY_MAX_AGE_USEC;
        speeds_store_prior(st, &s);
        CHECK_EQ_U64(devs[2].remembered_bw_bytes_per_s, 0);
        st = speeds_store_free(st);
}

int main(void) {
        const char *tmp = getenv("TMPDIR");

        snprintf(dir, sizeof dir, "%s/test-speeds.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir))
                return 99;
        test_round_trip();
        test_corrupt();
        test_foreign();
        test_huge();
        test_identity();
        test_store();
        test_gone_device_keeps_its_speed();
        test_remount_under_the_same_number();
        test_identity_cached_in_sample_order();
        {
                char cmd[PATH_MAX + 16];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
                (void) system(cmd);
        }
        TEST_EXIT();
}
