/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for virt.c: container detection on fake trees, one marker at a time. */
#include "virt.h"
#include "util.h"
#include "tap.h"

#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

static char base[] = "/tmp/wbtuned-test-virt.XXXXXX";
static int n_trees;

/* A new empty tree under base; returns its path (static buffer per call is enough: one at a time). */
static const char *new_tree(void) {
        static char path[256];

        snprintf(path, sizeof(path), "%s/t%d", base, n_trees++);
        if (mkdir(path, 0755) < 0)
                abort();
        return path;
}

/* mkdir -p the parent of root+rel, then write content (len bytes) into it. */
static void put(const char *root, const char *rel, const char *content, size_t len) {
        char path[512], *p;
        int fd;

        snprintf(path, sizeof(path), "%s%s", root, rel);
        for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
                *p = 0;
                (void) mkdir(path, 0755);
                *p = '/';
        }
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, content, len) != (ssize_t) len)
                abort();
        close(fd);
}

static void put_str(const char *root, const char *rel, const char *content) {
        put(root, rel, content, strlen(content));
}

/* mkdir -p root+rel. */
static void put_dir(const char *root, const char *rel) {
        char path[512];

        snprintf(path, sizeof(path), "%s%s", root, rel);
        for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
                *p = 0;
                (void) mkdir(path, 0755);
                *p = '/';
        }
        (void) mkdir(path, 0755);
}

/* proc/self/ns/<ns> as the kernel shows it: a symlink to "pid:[N]" that points nowhere. */
static void put_ns(const char *root, const char *ns, const char *target) {
        char rel[64], path[512];

        put_dir(root, "/proc/self/ns");
        snprintf(rel, sizeof(rel), "/proc/self/ns/%s", ns);
        snprintf(path, sizeof(path), "%s%s", root, rel);
        if (symlink(target, path) < 0)
                abort();
}

static virt_container detect(const char *root, int *ret_r) {
        virt_container v;

        *ret_r = virt_detect_container(root, &v);
        printf("# %s: r=%d container=%d name=\"%s\" evidence=\"%s\" ignored=\"%s\"\n", root, *ret_r, v.container,
               v.name, v.evidence, v.ignored);
        return v;
}

static void test_pid_ns_link(void) {
        CHECK(virt_pid_ns_is_initial("pid:[4026531836]"));
        CHECK(!virt_pid_ns_is_initial("pid:[4026532201]"));
        CHECK(!virt_pid_ns_is_initial("pid:[4026531836]x"));
        CHECK(!virt_pid_ns_is_initial("pid:[4026531836"));
        CHECK(!virt_pid_ns_is_initial("net:[4026531836]"));
        CHECK(!virt_pid_ns_is_initial(""));
        CHECK(!virt_pid_ns_is_initial(NULL));
}

static void test_none(void) {
        const char *t = new_tree();
        virt_container v;
        int r;

        v = detect(t, &r);
        CHECK(r == 0 && !v.container && v.name[0] == 0 && v.ignored[0] == 0);

        /* an empty marker file says nothing */
        put_str(t, "/run/systemd/container", "\n");
        v = detect(t, &r);
        CHECK(r == 0 && !v.container);
}

static void test_systemd_marker(void) {
        const char *t = new_tree();
        virt_container v;
        int r;

        put_str(t, "/run/systemd/container", "systemd-nspawn\n");
        v = detect(t, &r);
        CHECK(r == 0 && v.container);
        CHECK_STREQ(v.name, "systemd-nspawn");
        CHECK_STREQ(v.evidence, "/run/systemd/container");

        /* /run/host/container-manager comes first */
        put_str(t, "/run/host/container-manager", "podman\n");
        v = detect(t, &r);
        CHECK_STREQ(v.name, "podman");
        CHECK_STREQ(v.evidence, "/run/host/container-manager");
}

static void test_unreadable_marker(void) {
        const char *t = new_tree();
        virt_container v;
        int r;

        /* exists but cannot be read (a directory: EISDIR): do not guess */
        put_dir(t, "/run/systemd/container");
        v = detect(t, &r);
        CHECK(r == -EISDIR);
        CHECK(!v.container);
}

static void test_openvz_wsl_proot(void) {
        const char *t = new_tree();
        virt_container v;
        int r;

        put_dir(t, "/proc/vz");
        v = detect(t, &r);
        CHECK(r == 0 && v.container);
        CHECK_STREQ(v.name, "openvz");
        /* the host side of OpenVZ has /proc/bc too */
        put_dir(t, "/proc/bc");
        v = detect(t, &r);
        CHECK(r == 0 && !v.container);

        t = new_tree();
        put_str(t, "/proc/sys/kernel/osrelease", "5.15.153.1-microsoft-standard-WSL2\n");
        v = detect(t, &r);
        CHECK_STREQ(v.name, "wsl");

        t = new_tree();
        put_str(t, "/proc/self/status", "Name:\ttest\nState:\tR\nTracerPid:\t42\nUid:\t0\n");
        put_str(t, "/proc/42/comm", "proot\n");
        v = detect(t, &r);
        CHECK(r == 0 && v.container);
        CHECK_STREQ(v.name, "proot");
        /* traced by something else: no container */
        put_str(t, "/proc/42/comm", "gdb\n");
        v = detect(t, &r);
        CHECK(r == 0 && !v.container);
}

static void test_pid1_environ(void) {
        static const char env_lxc[] = "PATH=/bin\0container=lxc\0TERM=linux\0";
        static const char env_oci[] = "container=oci\0";
        static const char env_none[] = "PATH=/bin\0containerx=1\0";
        const char *t = new_tree();
        virt_container v;
        int r;

        put(t, "/proc/1/environ", env_lxc, sizeof(env_lxc) - 1);
        v = detect(t, &r);
        CHECK_STREQ(v.name, "lxc");
        CHECK_STREQ(v.evidence, "container= in /proc/1/environ");

        t = new_tree();
        put(t, "/proc/1/environ", env_none, sizeof(env_none) - 1);
        v = detect(t, &r);
        CHECK(r == 0 && !v.container);

        /* "oci" names no manager: the well-known files may, else container-other */
        t = new_tree();
        put(t, "/proc/1/environ", env_oci, sizeof(env_oci) - 1);
        v = detect(t, &r);
        CHECK_STREQ(v.name, "container-other");
        put_str(t, "/.dockerenv", "");
        v = detect(t, &r);
        CHECK_STREQ(v.name, "docker");
}

static void test_files_and_pid_ns(void) {
        const char *t = new_tree();
        virt_container v;
        int r;

        /* /.dockerenv with no way to tell the PID namespace: believed */
        put_str(t, "/.dockerenv", "");
        v = detect(t, &r);
        CHECK(r == 0 && v.container);
        CHECK_STREQ(v.name, "docker");
        CHECK_STREQ(v.evidence, "/.dockerenv");

        /* podman's file comes before docker's */
        put_str(t, "/run/.containerenv", "");
        v = detect(t, &r);
        CHECK_STREQ(v.name, "podman");

        /* in a PID namespace of its own: a container */
        t = new_tree();
        put_str(t, "/.dockerenv", "");
        put_ns(t, "pid", "pid:[4026532201]");
        v = detect(t, &r);
        CHECK(r == 0 && v.container);
        CHECK_STREQ(v.name, "docker");

        /* in the initial PID namespace: a machine booted from a container image (this CI machine) */
        t = new_tree();
        put_str(t, "/.dockerenv", "");
        put_ns(t, "pid", "pid:[4026531836]");
        v = detect(t, &r);
        CHECK(r == 0 && !v.container);
        CHECK(strstr(v.ignored, "/.dockerenv") != NULL);
        CHECK(strstr(v.ignored, "initial PID namespace") != NULL);

        /* a strong marker is believed even in the initial PID namespace */
        put_str(t, "/run/systemd/container", "lxc\n");
        v = detect(t, &r);
        CHECK(r == 0 && v.container);
        CHECK_STREQ(v.name, "lxc");
        CHECK(v.ignored[0] == 0);
}

static void test_cgroup_namespace(void) {
        const char *t = new_tree();
        virt_container v;
        int r;

        /* cgroup v1: the named systemd hierarchy without release_agent is not its root */
        put_ns(t, "cgroup", "cgroup:[4026532300]");
        put_dir(t, "/sys/fs/cgroup/systemd");
        v = detect(t, &r);
        CHECK(r == 0 && v.container);
        CHECK_STREQ(v.name, "container-other");
        put_str(t, "/sys/fs/cgroup/systemd/release_agent", "");
        v = detect(t, &r);
        CHECK(r == 0 && !v.container);

        /* cgroup v2: cgroup.events and cgroup.type exist only below the root */
        t = new_tree();
        put_ns(t, "cgroup", "cgroup:[4026532300]");
        put_str(t, "/sys/fs/cgroup/cgroup.controllers", "cpu io memory\n");
        put_str(t, "/sys/kernel/cgroup/features", "nsdelegate\n");
        v = detect(t, &r);
        CHECK(r == 0 && !v.container);
        put_str(t, "/sys/fs/cgroup/cgroup.events", "populated 1\n");
        put_str(t, "/sys/fs/cgroup/cgroup.type", "domain\n");
        v = detect(t, &r);
        CHECK(r == 0 && v.container);
        /* ... but it is a weak marker: not in the initial PID namespace only */
        put_ns(t, "pid", "pid:[4026531836]");
        v = detect(t, &r);
        CHECK(r == 0 && !v.container && v.ignored[0] != 0);
}

static void test_name_is_plain(void) {
        const char *t = new_tree();
        virt_container v;
        int r;

        put_str(t, "/run/systemd/container", "evil\x1b[31m\"name\"");
        v = detect(t, &r);
        CHECK(r == 0 && v.container);
        CHECK_STREQ(v.name, "evil??31m?name?");
}

int main(void) {
        virt_container live;
        int r;

        if (!mkdtemp(base))
                return 99;
        test_pid_ns_link();
        test_none();
        test_systemd_marker();
        test_unreadable_marker();
        test_openvz_wsl_proot();
        test_pid1_environ();
        test_files_and_pid_ns();
        test_cgroup_namespace();
        test_name_is_plain();

        /* the live system: whatever it is, the call must work */
        r = virt_detect_container(NULL, &live);
        printf("# this machine: r=%d container=%d name=\"%s\" evidence=\"%s\" ignored=\"%s\"\n", r, live.container,
               live.name, live.evidence, live.ignored);
        CHECK(r == 0 || r == -EACCES);

        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
        if (system(cmd) != 0)
                printf("# could not remove %s\n", base);
        TEST_EXIT();
}
