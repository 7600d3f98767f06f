/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Does this process run in a container? Decided in the order systemd's detect_container() uses, under a root prefix. */
#pragma once

#include <stdbool.h>

typedef struct virt_container {
        bool container;        /* the vm and bdi knobs belong to a host kernel shared with others */
        char name[64];         /* "systemd-nspawn", "docker", "lxc", "container-other"...; "" when none */
        char evidence[128];    /* what decided: "/run/systemd/container", "/.dockerenv", ... */
        char ignored[256];     /* a marker that was not believed, and why; "" when none */
} virt_container;

/* Reads under root (NULL: the live system). 0 with *ret filled; -errno when a file that decides
 * exists but cannot be read (as systemd, which then does not guess either).
 *
 * One difference from systemd: the weak markers (/.dockerenv, /run/.containerenv, a cgroup
 * namespace) do not count while the process is in the initial PID namespace. A machine booted
 * from an image that was built as a container keeps /.dockerenv, and its kernel is its own;
 * systemd-detect-virt calls it "docker". ret->ignored says so. */
int virt_detect_container(const char *root, virt_container *ret);

/* Whether a /proc/<pid>/ns/pid link target ("pid:[4026531836]") names the initial PID namespace. */
bool virt_pid_ns_is_initial(const char *link_target);
