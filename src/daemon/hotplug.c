/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Device hotplug from udev (sd-device monitor). */
#include "hotplug.h"

#include <errno.h>
#include <stdlib.h>
#include <systemd/sd-device.h>

#include "log.h"

struct hotplug {
        sd_device_monitor *monitor;
        hotplug_cb cb;
        void *userdata;
};

static const char *action_name(sd_device *d) {
        sd_device_action_t a;

        if (sd_device_get_action(d, &a) < 0)
                return "unknown";
        switch (a) {
        case SD_DEVICE_ADD:    return "add";
        case SD_DEVICE_REMOVE: return "remove";
        case SD_DEVICE_CHANGE: return "change";
        case SD_DEVICE_MOVE:   return "move";
        case SD_DEVICE_ONLINE: return "online";
        case SD_DEVICE_OFFLINE: return "offline";
        case SD_DEVICE_BIND:   return "bind";
        case SD_DEVICE_UNBIND: return "unbind";
        default:               return "unknown";
        }
}

static int on_uevent(sd_device_monitor *m, sd_device *d, void *userdata) {
        hotplug *h = userdata;
        const char *subsystem = NULL, *sysname = NULL;

        (void) m;
        (void) sd_device_get_subsystem(d, &subsystem);
        (void) sd_device_get_sysname(d, &sysname);
        log_debug("uevent: %s %s %s", action_name(d), subsystem ? subsystem : "?", sysname ? sysname : "?");
        h->cb(h->userdata);
        return 0;
}

int hotplug_new(sd_event *e, hotplug_cb cb, void *userdata, hotplug **ret) {
        hotplug *h;
        int r;

        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->cb = cb;
        h->userdata = userdata;

        r = sd_device_monitor_new(&h->monitor);
        if (r >= 0)
                r = sd_device_monitor_filter_add_match_subsystem_devtype(h->monitor, "block", NULL);
        if (r >= 0)
                r = sd_device_monitor_filter_add_match_subsystem_devtype(h->monitor, "bdi", NULL);
        if (r >= 0)
                r = sd_device_monitor_attach_event(h->monitor, e);
        if (r >= 0)
                r = sd_device_monitor_start(h->monitor, on_uevent, h);
        if (r < 0) {
                hotplug_free(h);
                return r;
        }
        *ret = h;
        return 0;
}

hotplug *hotplug_free(hotplug *h) {
        if (!h)
                return NULL;
        sd_device_monitor_unref(h->monitor);
        free(h);
        return NULL;
}
