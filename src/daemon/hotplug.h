/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Device hotplug from udev (sd-device monitor): a new, changed or removed block device or BDI
 * makes the daemon look at once instead of at its next tick. */
#pragma once

#include <systemd/sd-event.h>

typedef struct hotplug hotplug;

/* Called once per uevent of subsystem "block" or "bdi" (the event itself is logged at debug level). */
typedef void (*hotplug_cb)(void *userdata);

/* Starts monitoring udev events on e. -errno when there is no udev to listen to (containers, no
 * netlink): the caller keeps polling each tick. */
int hotplug_new(sd_event *e, hotplug_cb cb, void *userdata, hotplug **ret);
hotplug *hotplug_free(hotplug *h);
