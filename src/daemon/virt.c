/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Does this process run in a container? The order of systemd's detect_container() (src/basic/virt.c). */
#include "virt.h"

#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "util.h"

/* PROC_PID_INIT_INO in include/linux/proc_ns.h: the initial PID namespace's inode, fixed. */
#define PID_NS_INIT_INO UINT64_C(0xEFFFFFFC)

bool virt_pid_ns_is_initial(const char *link_target) {
        uint64_t ino;
        char close, extra;

        /* exactly "pid:[N]": one closing bracket and nothing after it */
        return link_target && sscanf(link_target, "pid:[%" SCNu64 "%c%c", &ino, &close, &extra) == 2 && close == ']' &&
               ino == PID_NS_INIT_INO;
}

/* First line of root+path, blanks trimmed. 1 non-empty, 0 missing or empty, -errno otherwise. */
static int read_marker(const char *root, const char *path, char *buf, size_t size) {
        _cleanup_free_ char *full = path_join_root(root, path);
        size_t n;
        int r;

        if (!full)
                return -ENOMEM;
        r = read_one_line(full, buf, size);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        n = strlen(buf);
        while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\t' || buf[n - 1] == '\r'))
                buf[--n] = 0;
        return n > 0;
}

static bool exists(const char *root, const char *path) {
        _cleanup_free_ char *full = path_join_root(root, path);

        return full && access(full, F_OK) == 0;
}

/* A container manager's name goes into logs and JSON: keep it short and plain. */
static void set_name(virt_container *v, const char *name) {
        size_t i;

        for (i = 0; name[i] && i < sizeof(v->name) - 1; i++) {
                char c = name[i];
                bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                             c == '-' || c == '_' || c == '.';
                v->name[i] = plain ? c : '?';
        }
        v->name[i] = 0;
}

static void found(virt_container *v, const char *name, const char *evidence) {
        v->container = true;
        set_name(v, name);
        snprintf(v->evidence, sizeof(v->evidence), "%s", evidence);
}

/* "$container" in PID 1's environment (needs ptrace access to PID 1: failures mean "unknown"). */
static int pid1_container_env(const char *root, char *buf, size_t size) {
        _cleanup_free_ char *full = path_join_root(root, "/proc/1/environ"), *env = NULL;
        const char *value;
        size_t len;
        int r;

        if (!full)
                return -ENOMEM;
        r = read_file_full(full, &env, &len);
        if (r < 0)
                return r;
        for (size_t i = 0; i < len; i += strlen(env + i) + 1)
                if ((value = startswith(env + i, "container="))) {
                        snprintf(buf, size, "%s", value);
                        return buf[0] != 0;
                }
        return 0;
}

/* proot runs its guest under ptrace: a tracer whose comm starts with "proot". */
static bool traced_by_proot(const char *root) {
        _cleanup_free_ char *status_path = path_join_root(root, "/proc/self/status"), *status = NULL;
        char comm_path[64], comm[32];
        const char *line;
        uint64_t tracer;

        if (!status_path || read_file_full(status_path, &status, NULL) < 0)
                return false;
        line = strstr(status, "\nTracerPid:");
        if (!line || sscanf(line + 11, "%" SCNu64, &tracer) != 1 || tracer == 0)
                return false;
        snprintf(comm_path, sizeof(comm_path), "/proc/%" PRIu64 "/comm", tracer);
        return read_marker(root, comm_path, comm, sizeof(comm)) > 0 && startswith(comm, "proot");
}

/* The well-known files; docker last (its file may be left in any image built with it). */
static const struct {
        const char *path;
        const char *name;
} container_files[] = {
        { "/run/.containerenv", "podman" },
        { "/.dockerenv",        "docker" },
};

static const char *container_file(const char *root, const char **ret_path) {
        for (size_t i = 0; i < ELEMENTSOF(container_files); i++)
                if (exists(root, container_files[i].path)) {
                        *ret_path = container_files[i].path;
                        return container_files[i].name;
                }
        return NULL;
}

/* systemd's running_in_cgroupns(): the root of the cgroup tree we see is not the real root. */
static bool in_cgroup_namespace(const char *root) {
        _cleanup_free_ char *ns = path_join_root(root, "/proc/self/ns/cgroup");
        struct stat st;

        /* the link itself: the kernel supports cgroup namespaces (a fake tree's link points nowhere) */
        if (!ns || lstat(ns, &st) < 0)
                return false;
        if (exists(root, "/sys/fs/cgroup/cgroup.controllers")) {
                /* cgroup v2: cgroup.events exists in every cgroup but the real root; cgroup.type too */
                if (!exists(root, "/sys/fs/cgroup/cgroup.events"))
                        return false;
                if (exists(root, "/sys/fs/cgroup/cgroup.type"))
                        return true;
                /* kernels older than cgroup.type have no /sys/kernel/cgroup/features either */
                return !exists(root, "/sys/kernel/cgroup/features");
        }
        /* cgroup v1: release_agent exists only in the root of the named systemd hierarchy */
        return exists(root, "/sys/fs/cgroup/systemd") && !exists(root, "/sys/fs/cgroup/systemd/release_agent");
}

static bool in_initial_pid_ns(const char *root) {
        _cleanup_free_ char *full = path_join_root(root, "/proc/self/ns/pid");
        char target[64];
        ssize_t n;

        if (!full)
                return false;
        n = readlink(full, target, sizeof(target) - 1);
        if (n < 0)
                return false;     /* cannot tell: believe the markers */
        target[n] = 0;
        return virt_pid_ns_is_initial(target);
}

/* A container manager named in a file or variable: "oci" names none, the files may. */
static void translate(const char *root, virt_container *v, const char *name, const char *evidence) {
        const char *path, *file_name;

        if (strcmp(name, "oci") == 0) {
                file_name = container_file(root, &path);
                found(v, file_name ? file_name : "container-other", evidence);
                return;
        }
        found(v, name, evidence);
}

int virt_detect_container(const char *root, virt_container *ret) {
        char buf[256];
        const char *path, *name;
        int r;

        *ret = (virt_container) {};

        /* OpenVZ: /proc/vz exists inside and outside, /proc/bc only outside */
        if (exists(root, "/proc/vz") && !exists(root, "/proc/bc")) {
                found(ret, "openvz", "/proc/vz without /proc/bc");
                return 0;
        }
        if (read_marker(root, "/proc/sys/kernel/osrelease", buf, sizeof(buf)) > 0 &&
            (strstr(buf, "Microsoft") || strstr(buf, "WSL"))) {
                found(ret, "wsl", "/proc/sys/kernel/osrelease");
                return 0;
        }
        if (traced_by_proot(root)) {
                found(ret, "proot", "TracerPid in /proc/self/status");
                return 0;
        }

        r = read_marker(root, "/run/host/container-manager", buf, sizeof(buf));
        if (r < 0)
                return log_debug_errno(r, "Failed to read /run/host/container-manager: %m");
        if (r > 0) {
                translate(root, ret, buf, "/run/host/container-manager");
                return 0;
        }

        if (!root && getpid() == 1) {
                const char *e = getenv("container");

                /* PID 1's own variable is authoritative: empty means no container */
                if (e && !*e)
                        return 0;
                if (e) {
                        translate(root, ret, e, "$container of PID 1");
                        return 0;
                }
        } else {
                r = read_marker(root, "/run/systemd/container", buf, sizeof(buf));
                if (r < 0)
                        return log_debug_errno(r, "Failed to read /run/systemd/container: %m");
                if (r > 0) {
                        translate(root, ret, buf, "/run/systemd/container");
                        return 0;
                }
                r = pid1_container_env(root, buf, sizeof(buf));
                if (r > 0) {
                        translate(root, ret, buf, "container= in /proc/1/environ");
                        return 0;
                }
                if (r < 0)
                        log_debug_errno(r, "Failed to read $container of PID 1, ignoring: %m");
        }

        /* the weak markers */
        name = container_file(root, &path);
        if (!name && in_cgroup_namespace(root)) {
                name = "container-other";
                path = "a cgroup namespace";
        }
        if (!name)
                return 0;
        if (in_initial_pid_ns(root)) {
                snprintf(ret->ignored, sizeof(ret->ignored),
                         "%s suggests %s, but this process is in the initial PID namespace: a machine booted "
                         "from a container image, not a container", path, name);
                return 0;
        }
        found(ret, name, path);
        return 0;
}
