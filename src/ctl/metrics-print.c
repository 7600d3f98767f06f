/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbtunectl metrics: the text the daemon rendered (src/daemon/metrics.c), printed as sent or escaped. */
#include <errno.h>

#include "escape.h"
#include "metrics-print.h"
#include "protocol.h"

int metrics_print_result(json_object *result, bool for_terminal, FILE *f) {
        json_object *texts = proto_get(result, PF_METRICS_TEXT);

        if (!json_object_is_type(texts, json_type_array))
                return -EBADMSG;
        for (size_t i = 0; i < json_object_array_length(texts); i++) {
                json_object *text = json_object_array_get_idx(texts, i);

                if (!json_object_is_type(text, json_type_string))
                        return -EBADMSG;
                if (for_terminal ? escape_lines_fputs(json_object_get_string(text), f) < 0 :
                                   fwrite(json_object_get_string(text), 1, (size_t) json_object_get_string_len(text), f) !=
                                           (size_t) json_object_get_string_len(text))
                        return -EIO;
        }
        return 0;
}
