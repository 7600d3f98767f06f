#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Shell completion of wbtunectl against a daemon on a fake tree: verbs, options, option values, and the
# daemon's device names and mount points (one with a space, one with a backslash, one that is shell
# code) in bash; the same in zsh where it is installed. 77 without bash-completion.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_binaries

bash_completion=${BASH_COMPLETION:-/usr/share/bash-completion/bash_completion}
[[ -r $bash_completion ]] || skip "bash-completion is not installed ($bash_completion)"
completion=$top_srcdir/shell-completion/bash/wbtunectl

make_tmpdir tmp
# the fake tree of tests/fake (254:0 vda on /), with the same device on a path with a space and on one
# that is shell code (mountinfo spells the space in octal, as the kernel does)
cp -r "$top_srcdir/tests/fake/linux-6.18" "$tmp/root"
chmod -R u+w "$tmp/root"
printf '%s\n' '50 27 254:0 / /srv/with\040space rw,relatime - ext4 /dev/vda rw' \
        '51 27 254:0 / /mnt/$(touch${IFS}pwned) rw,relatime - ext4 /dev/vda rw' \
        '52 27 254:0 / /srv/back\134slash rw,relatime - ext4 /dev/vda rw' >> "$tmp/root/proc/self/mountinfo"
printf '[daemon]\ntick = 200ms\n[policy]\nmode = observe\n' > "$tmp/wbtuned.conf"
"$WBTUNED" --root "$tmp/root" --socket "$tmp/ctl" -c "$tmp/wbtuned.conf" --dry-run --quiet \
        > "$tmp/daemon.out" 2> "$tmp/daemon.err" < /dev/null &
daemon=$!
push_cleanup "stop_pid $daemon"
push_cleanup '[[ $_exit_rc -ne 0 && $_exit_rc -ne 77 ]] && { echo "--- daemon stderr"; cat "$tmp/daemon.err"; }'
wait_for_socket "$tmp/ctl" 10 || fail "the daemon did not start"
"$WBTUNECTL" --socket "$tmp/ctl" --list=devices > "$tmp/list" || fail "--list=devices failed"
# the fake tree names the device after its file system (it has no /sys/dev/block): "ext4 /dev/vda"
name=$("$WBTUNECTL" --socket "$tmp/ctl" --json=short show 254:0 | json_get "$(cat)" 'j["device"]["name"]')
grep -qxF "$name" "$tmp/list" && grep -qx '254:0' "$tmp/list" && grep -qx '/srv/with space' "$tmp/list" ||
        { cat "$tmp/list"; fail "--list=devices does not list '$name', 254:0 and '/srv/with space'"; }

# complete WORD...: what bash completion offers for a command line of these words, the last being the one
# completed; "=" and ":" are words of their own, as readline splits them (COMP_WORDBREAKS). Prints
# COMPREPLY one a line. Runs in a bash with bash-completion and our file sourced, in $tmp/cwd.
mkdir -p "$tmp/cwd"
complete_words() {
        (cd "$tmp/cwd" && PATH=$(dirname "$WBTUNECTL"):$PATH bash --norc --noprofile -c '
                . "$1" && . "$2" || exit 99
                compopt() { :; }   # readline options: no readline here
                shift 2
                COMP_WORDS=("$@")
                COMP_CWORD=$(($# - 1))
                COMP_LINE=
                for w in "$@"; do
                        case $w:$COMP_LINE in
                        [=:]:* | *:*[=:]) COMP_LINE+=$w ;;
                        *) COMP_LINE+=${COMP_LINE:+ }$w ;;
                        esac
                done
                COMP_POINT=${#COMP_LINE}
                COMPREPLY=()
                _wbtunectl wbtunectl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
                printf "%s\n" "${COMPREPLY[@]}"
        ' - "$bash_completion" "$completion" "$@")
}

# expect NAME WANTED -- WORDS...: the offers are exactly the lines of WANTED (sorted).
expect() {
        local name=$1 want=$2 got
        shift 3
        got=$(complete_words "$@" | sort)
        want=$(printf '%s' "$want" | sort)
        [[ $got == "$want" ]] || { printf -- '--- wanted\n%s\n--- got\n%s\n' "$want" "$got"; fail "bash: $name"; }
        ok "bash: $name"
}

verbs=$("$WBTUNECTL" --list=verbs)
for v in status devices show explain top wait history plot metrics reload restore; do
        grep -qx "$v" <<< "$verbs" || fail "--list=verbs has no $v"
done
expect "every verb" "$verbs" -- wbtunectl ""
expect "a verb by its start" $'status\nshow' -- wbtunectl s
expect "a verb after options" "wait" -- wbtunectl --no-pager --socket "$tmp/ctl" wa
expect "options" $'--no-pager\n--no-legend' -- wbtunectl --no
expect "an option with a value" "--timeout=" -- wbtunectl --ti
expect "--json's modes" $'pretty\nshort\noff' -- wbtunectl --json = ""
expect "--json=sh" "short" -- wbtunectl --json = sh
expect "--list's values" $'verbs\noptions\ndevices' -- wbtunectl --list ""

devices=$(while IFS= read -r name; do printf '%q\n' "$name"; done < "$tmp/list")
expect "show: the daemon's devices and mount points" "$devices" -- wbtunectl --socket "$tmp/ctl" show ""
expect "wait: a mount point with a space, quoted" '/srv/with\ space' -- wbtunectl -s "$tmp/ctl" wait /srv/w
expect "a mount point typed with its backslash" '/srv/with\ space' -- wbtunectl -s "$tmp/ctl" wait '/srv/with\ s'
expect "--socket=PATH" "$(printf '%q' "$name")" -- wbtunectl --socket = "$tmp/ctl" explain "${name:0:3}"
expect "MAJ:MIN after its colon" "0" -- wbtunectl -s "$tmp/ctl" history 254 : ""
expect "only the first argument is a device" "" -- wbtunectl -s "$tmp/ctl" show 254:0 ""
expect "no device for a verb without one" "" -- wbtunectl -s "$tmp/ctl" status ""
# a backslash in a name is listed as itself (escaping it would make the path another one)
expect "a mount point with a backslash" '/srv/back\\slash' -- wbtunectl -s "$tmp/ctl" wait /srv/b
expect "a mount point that is shell code stays text" '/mnt/\$\(touch\$\{IFS\}pwned\)' -- wbtunectl -s "$tmp/ctl" show /mnt/
[[ -e $tmp/cwd/pwned ]] && fail "completing ran a mount point's name as code"
ok "bash: nothing from the daemon was run"

# --- zsh, where it is installed: a real completion in a zsh on a pseudo-terminal ----------------------------
if ! command -v zsh >/dev/null; then
        log "zsh is not installed: its completion is not checked"
        exit 0
fi
zsh -n "$top_srcdir/shell-completion/zsh/_wbtunectl" || fail "zsh: _wbtunectl does not parse"
mkdir -p "$tmp/zfunc"
cp "$top_srcdir/shell-completion/zsh/_wbtunectl" "$tmp/zfunc/"
# zsh_complete LINE: the line after zsh completed it (TAB) in an interactive zsh under zpty
zsh_complete() {
        cd "$tmp/cwd" && PATH=$(dirname "$WBTUNECTL"):$PATH timeout 30 zsh -f -c '
                zmodload zsh/zpty || exit 77
                zpty z zsh -f -i
                # READY spelled apart, so that the echo of this line does not match it
                zpty -w z "fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D; PS1=; unsetopt beep; "\
"bindkey -e; print RE\"\"ADY"
                zpty -r -m z out "*READY*" || exit 98
                zpty -w -n z "$2"$'"'"'\t'"'"'
                sleep 2
                all=
                while zpty -r -t z chunk; do all+=$chunk; done
                print -r -- "$all"
                zpty -d z
        ' - "$tmp/zfunc" "$1" 2>&1
}
out=$(zsh_complete "wbtunectl wai")
rc=$?
[[ $rc -eq 77 ]] && { log "zsh has no zpty module: its completion is not checked"; exit 0; }
grep -q 'wbtunectl wait' <<< "$out" || { cat -A <<< "$out"; fail "zsh: 'wbtunectl wai' does not complete to wait"; }
ok "zsh: a verb"
out=$(zsh_complete "wbtunectl --socket $tmp/ctl show /srv/wi")
grep -q 'show /srv/with\\ space' <<< "$out" || { cat -A <<< "$out"; fail "zsh: no mount point from the daemon"; }
ok "zsh: a mount point from the daemon, quoted"
out=$(zsh_complete "wbtunectl --socket $tmp/ctl wait /srv/b")
grep -qF 'wait /srv/back\\slash' <<< "$out" || { cat -A <<< "$out"; fail "zsh: the mount point with a backslash"; }
ok "zsh: a mount point with a backslash, as itself"
out=$(zsh_complete "wbtunectl --socket $tmp/ctl show /mnt/")
grep -q 'show /mnt/\\$\\(touch\\$\\{IFS\\}pwned\\)' <<< "$out" || { cat -A <<< "$out"; fail "zsh: the mount point that is shell code"; }
[[ -e $tmp/cwd/pwned ]] && fail "zsh completion ran a mount point's name as code"
ok "zsh: a mount point that is shell code, quoted, not run"
exit 0
