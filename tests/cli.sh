#!/bin/sh
# The zeroday command line, as a user drives it: usage and exit codes,
# config errors, hostile input refused, and a tree's whole life.
# Speaks TAP. Needs $ZERODAY (set by make check) and git.

test_name=cli
. "$ZERODAY_SRCDIR/tests/lib.sh"

# expect STATUS DESCRIPTION PATTERN -- ARGS...: runs zeroday with ARGS, and
# checks the exit status and that the output matches the grep PATTERN.
expect() {
	want=$1 desc=$2 pattern=$3
	shift 4
	out=$("$ZERODAY" "$@" 2>&1)
	got=$?
	if [ "$got" -eq "$want" ] && printf '%s\n' "$out" | grep -q -e "$pattern"; then
		ok "$desc"
	else
		not_ok "$desc"
		echo "# exit $got (wanted $want), output:"
		printf '%s\n' "$out" | sed 's/^/#   /'
	fi
}

z="--state-dir=$scratch/state"

expect 2 "no command is misuse" "Usage: zeroday" -- 
expect 2 "unknown command is misuse" "unknown command 'frob'" -- frob
expect 0 "--help lists the commands" "poll" -- --help
expect 2 "unknown global option is misuse" "Unknown option" -- --frob status
for cmd in init poll status version build boot "tree add" "tree list" "tree show" "tree rm" "tree set"; do
	# shellcheck disable=SC2086
	expect 0 "$cmd --help" "Usage:" -- $cmd --help
done
expect 2 "tree without a subcommand is misuse" "Usage: zeroday tree" -- tree
expect 2 "unknown tree subcommand is misuse" "unknown command 'frob'" -- tree frob
expect 2 "unknown option is misuse" "Unknown option --frob" -- "$z" poll --frob
expect 2 "tree add without a URL is misuse" "needs a NAME and a URL" -- "$z" tree add x
expect 0 "version" "zeroday 0.1.0 (libgit2" -- version

expect 1 "commands before init say so" "run 'zeroday init' first" -- "$z" status
expect 0 "init" "zeroday state ready in $scratch/state (schema [0-9][0-9]*)" -- "$z" init
expect 0 "init again is harmless" "ready" -- "$z" init

# Config errors name file, group and key.
printf '[git]\nallow-shh = true\n' > "$scratch/bad.conf"
expect 1 "unknown key named" "$scratch/bad.conf: \[git\] allow-shh: unknown key" -- \
	--config="$scratch/bad.conf" "$z" status
printf '[gti]\n' > "$scratch/bad.conf"
expect 1 "unknown group named" "\[gti\]: unknown group" -- --config="$scratch/bad.conf" "$z" status
printf '[git]\nio-timeout = soon\n' > "$scratch/bad.conf"
expect 1 "bad value named" "\[git\] io-timeout: expected a whole number" -- \
	--config="$scratch/bad.conf" "$z" status
printf '[boot]\nhosts = qemu:///system*0\n' > "$scratch/bad.conf"
expect 1 "a bad slot count fails at load" "\[boot\] hosts: 'qemu:///system\*0'" -- \
	--config="$scratch/bad.conf" "$z" status
expect 1 "a device is no config file" "/dev/zero: not a regular file" -- \
	--config=/dev/zero "$z" status
printf '[slurm]\nspool = /srv/spool   # shared with the nodes\n' > "$scratch/bad.conf"
expect 1 "a comment after a value is refused, not kept in it" \
	"\[slurm\] spool: a comment after a value is part of the value" -- \
	--config="$scratch/bad.conf" "$z" status

# Every zeroday.conf example in the docs loads as printed: the indented
# blocks of README.md and doc/*.md with a [group] line, and zeroday.conf(5)'s
# EXAMPLE. (Two once had a comment after a value: one did not start, the
# other took the comment into a path.)
examples="$scratch/examples"
mkdir -p "$examples"
for doc in "$ZERODAY_SRCDIR/README.md" "$ZERODAY_SRCDIR"/doc/*.md; do
	awk -v out="$examples/$(basename "$doc" .md)" '
		function flush() {
			if (block != "" && conf) {
				n++
				printf "%s", block > (out "-" n ".conf")
				close(out "-" n ".conf")
			}
			block = ""; conf = 0; indent = -1
		}
		BEGIN { indent = -1 }
		/^[ \t]*$/ { if (block != "") block = block "\n"; next }
		/^    / {
			if (indent < 0) { match($0, /^ */); indent = RLENGTH }
			line = substr($0, indent + 1)
			block = block line "\n"
			if (line ~ /^\[(zeroday|git|build|slurm|boot|mail|report|commands)\][ \t]*$/)
				conf = 1
			next
		}
		{ flush() }
		END { flush() }' "$doc"
done
sed -n '/^\.SH EXAMPLE/,/^\.SH SEE/p' "$ZERODAY_SRCDIR/man/zeroday.conf.5" |
	sed -n '/^\.nf/,/^\.fi/p' | sed '1d;$d' > "$examples/zeroday.conf.5.conf"
check "the docs hold four zeroday.conf examples or more" \
	test "$(find "$examples" -name '*.conf' -size +0 | wc -l)" -ge 4
for conf in "$examples"/*.conf; do
	expect 0 "the docs' example $(basename "$conf") loads" "state ready" -- \
		--config="$conf" --state-dir="$scratch/example-state" init
done

# Hostile URLs, names and patterns are refused, and nothing is recorded.
marker="$scratch/pwned"
for url in "ext::sh -c touch% $marker" "-oProxyCommand=touch $marker" "--upload-pack=touch" \
	"file:///etc" "/etc" "ssh://host/x" "ssh://-oProxyCommand=x/y" "http://example.org/x" \
	"https://example.org/\$(touch $marker)" "git://example.org/a;touch $marker" \
	"git://example.org/a|b" "git://example.org/\`id\`" "host:path" "fd::3"; do
	expect 1 "refused URL $url" "refused URL" -- "$z" tree add hostile -- "$url"
done
expect 1 "refused tree name" "refused tree name" -- "$z" tree add -- -x git://example.org/x
expect 1 "refused tree name with a slash" "refused tree name" -- "$z" tree add a/b git://example.org/x
expect 1 "refused branch pattern" "refused branch pattern" -- "$z" tree add x git://example.org/x -- '-*'
expect 1 "refused base branch" "refused branch name" -- "$z" tree add x git://example.org/x --base 'up/a..b'
expect 1 "refused recipient" "refused address" -- "$z" tree add x git://example.org/x --to 'a@b.org, c@d.org'
if [ -e "$marker" ]; then not_ok "no hostile command ran"; else ok "no hostile command ran"; fi
expect 0 "nothing recorded" "^Trees: 0" -- "$z" status

# A tree's life, on a local repository (allowed by the config).
src="$scratch/src"
git init -q -b master "$src"
echo 1 > "$src/a.c"
git -C "$src" add a.c && git -C "$src" commit -q -m "first commit"
first=$(git -C "$src" rev-parse HEAD)
printf '[git]\nallow-local-trees = true\n' > "$scratch/local.conf"
l="--config=$scratch/local.conf"
expect 1 "local path refused without allow-local-trees" "allow-local-trees" -- "$z" tree add demo "$src"
expect 0 "tree add" "added tree demo (rebasable)" -- "$l" "$z" tree add demo "$src" --to "Dev <dev@example.org>"
expect 1 "duplicate tree" "already exists" -- "$l" "$z" tree add demo "$src"
expect 0 "tree list" "^demo  *rebasable" -- "$z" tree list
expect 0 "tree set" "updated tree demo" -- "$z" tree set demo --blacklist 'tmp-*' --policy non-rebasable
expect 0 "tree show" "blacklist    tmp-\*" -- "$z" tree show demo
expect 0 "tree show policy" "policy       non-rebasable" -- "$z" tree show demo
expect 0 "tree show recipients" "^cc  *Dev <dev@example.org>$" -- "$z" tree show demo

# Mail settings: lists and maintainers' addresses (--to is --cc), private, mail-clean.
# has_options TEXT OPTION...: TEXT mentions each OPTION.
has_options() {
	text=$1
	shift
	for o in "$@"; do printf '%s\n' "$text" | grep -q -e "$o" || return 1; done
}
out=$("$ZERODAY" tree add --help)
check "tree add --help: --list, --cc, --private, --mail-clean" \
	has_options "$out" --list=ADDRESS --cc=ADDRESS --private --mail-clean
check "--to is hidden from it" sh -c '! printf "%s\n" "$1" | grep -q -e "--to"' - "$out"
out=$("$ZERODAY" tree set --help)
check "tree set --help: --no-list, --no-cc, --public, --no-mail-clean" \
	has_options "$out" --no-list=ADDRESS --no-cc=ADDRESS --public --no-mail-clean
check "--to and --no-to are hidden from it" sh -c '! printf "%s\n" "$1" | grep -q -e "--to\|--no-to"' - "$out"
expect 0 "tree add with lists, cc, private, mail-clean" "added tree mail" -- "$l" "$z" tree add mail "$src" \
	--list "Net Dev <netdev@example.org>" --list lkml@example.org --cc "Ann <ann@example.org>" \
	--to "ANN@example.org" --cc bo@example.org --private --mail-clean
expect 0 "tree show lists" "^lists  *Net Dev <netdev@example.org> lkml@example.org$" -- "$z" tree show mail
expect 0 "tree show cc, one mailbox once" "^cc  *Ann <ann@example.org> bo@example.org$" -- "$z" tree show mail
expect 0 "tree show private" "^private  *yes$" -- "$z" tree show mail
expect 0 "tree show mail-clean" "^mail-clean  *yes$" -- "$z" tree show mail
expect 0 "tree show regzbot, off by default" "^regzbot  *no$" -- "$z" tree show mail
expect 0 "tree set --regzbot" "updated tree mail" -- "$z" tree set mail --regzbot
expect 0 "tree show regzbot" "^regzbot  *yes$" -- "$z" tree show mail
expect 2 "--regzbot and --no-regzbot together are refused" "contradict" -- \
	"$z" tree set mail --regzbot --no-regzbot
expect 0 "tree set --no-regzbot" "updated tree mail" -- "$z" tree set mail --no-regzbot
expect 0 "tree list marks it private" "^mail .*\[private\]" -- "$z" tree list
expect 0 "status --json shows the settings" \
	'"name": "mail", "policy": "rebasable", "lists": \["Net Dev <netdev@example.org>", "lkml@example.org"\], "cc": \["Ann <ann@example.org>", "bo@example.org"\], "prefixes": \[\], "private": true, "mail_clean": true' \
	-- "$z" status --json
expect 0 "tree set --prefix" "updated tree mail" -- "$z" tree set mail --prefix Net-Next
expect 0 "tree show prefixes, lower case" "^prefixes  *net-next$" -- "$z" tree show mail
expect 2 "a prefix with a space is refused" "subject prefix" -- "$z" tree set mail --prefix "net next"
expect 0 "tree set --no-prefix" "updated tree mail" -- "$z" tree set mail --no-prefix NET-next
expect 0 "tree show no prefixes" "^prefixes  *-$" -- "$z" tree show mail
expect 0 "tree set --no-cc by another spelling, --no-list, --public, --no-mail-clean" "updated tree mail" -- \
	"$z" tree set mail --no-cc "Whoever <ANN@EXAMPLE.ORG>" --no-list lkml@example.org --public --no-mail-clean
expect 0 "the cc dropped" "^cc  *bo@example.org$" -- "$z" tree show mail
expect 0 "the list dropped" "^lists  *Net Dev <netdev@example.org>$" -- "$z" tree show mail
expect 0 "public again" "^private  *no$" -- "$z" tree show mail
expect 0 "mail-clean off" "^mail-clean  *no$" -- "$z" tree show mail
expect 0 "--no-to is --no-cc, --to is --cc" "updated tree mail" -- "$z" tree set mail --no-to bo@example.org --to c@example.org
expect 0 "the cc swapped" "^cc  *c@example.org$" -- "$z" tree show mail
expect 2 "--private and --public contradict" "contradict" -- "$z" tree set mail --private --public
expect 1 "a bad list address is refused" "refused address 'netdev'" -- "$z" tree set mail --list netdev
expect 0 "and changes nothing" "^lists  *Net Dev <netdev@example.org>$" -- "$z" tree show mail
expect 0 "tree rm mail" "removed tree mail" -- "$z" tree rm mail
expect 1 "tree set refuses a bad target" "bad build target" -- "$z" tree set demo --target 'x86_64:defconfig;reboot'
expect 0 "tree set targets" "updated tree demo" -- "$z" tree set demo --target x86_64:defconfig:W=1 --target arm64:defconfig
expect 0 "tree show targets" "targets      x86_64:defconfig:W=1 arm64:defconfig" -- "$z" tree show demo
expect 1 "tree set refuses a payload not shipped" "payload 'nosuch': no such payload" -- \
	"$z" tree set demo --payload nosuch
expect 1 "tree set refuses a relative path" "payload '../smoke': expected a shipped" -- \
	"$z" tree set demo --payload ../smoke
expect 0 "tree set payloads" "updated tree demo" -- "$z" tree set demo --payload smoke --payload /opt/suite/net-stress
expect 0 "tree show payloads" "payloads     smoke /opt/suite/net-stress" -- "$z" tree show demo
expect 1 "a payload listed twice is refused" "listed already" -- "$z" tree set demo --payload smoke --payload /x/smoke
expect 0 "tree set default payloads" "updated tree demo" -- "$z" tree set demo --default-payloads
expect 0 "and the tree has none of its own" "^payloads  *-$" -- "$z" tree show demo
expect 2 "tree set bad policy" "policy must be" -- "$z" tree set demo --policy sometimes
expect 1 "tree set unknown tree" "no tree named 'nope'" -- "$z" tree set nope --policy rebasable
expect 1 "tree set hostile URL" "refused URL" -- "$l" "$z" tree set demo --url "ext::sh"
expect 0 "poll selects the head" "test $(echo "$first" | cut -c1-12) first commit" -- "$l" "$z" poll
expect 0 "poll again: unchanged" "demo: unchanged (1 branch)" -- "$l" "$z" poll demo
git -C "$src" checkout -q -b tmp-x
echo 2 > "$src/a.c" && git -C "$src" commit -q -am "second"
expect 0 "blacklisted branch skipped" "tmp-x: new at .*skipped (blacklisted by pattern 'tmp-\*')" -- "$l" "$z" poll
expect 0 "status shows the skip" "skipped tmp-x: blacklisted" -- "$z" status
expect 0 "status shows the queue" "Queue: 1 commit to test" -- "$z" status
expect 1 "poll of an unknown tree" "no tree named 'nope'" -- "$l" "$z" poll nope
expect 0 "tree rm" "removed tree demo" -- "$z" tree rm demo
expect 0 "queue emptied with the tree" "Queue: 0 commits" -- "$z" status

# Builds: a kbuild-like fixture repository, a commit against its parent.
kb="$scratch/kbuild"
kbuild_repo "$kb" base
sed -i 's/int ready = 1;/int ready = 1;\n\tint fresh;/' "$kb/src/net.c"
git -C "$kb" commit -q -am "net: unused variable"
expect 2 "build needs two arguments" "needs a TREE or REPOSITORY and a COMMIT" -- "$z" build "$kb"
expect 1 "build refuses a bad target" "bad build target 'x86_64:nonsense'" -- \
	"$z" build "$kb" HEAD --target x86_64:nonsense
expect 1 "build refuses a range" "refused\|not a revision\|invalid" -- "$z" build "$kb" HEAD~1..HEAD --target x86_64:defconfig
expect 0 "build reports the new warning" \
	"x86_64:defconfig [0-9a-f]*: new-diagnostics" -- "$z" build "$kb" HEAD --target x86_64:defconfig
expect 0 "and names it" "warning src/net.c:6: unused variable 'fresh' \[-Wunused-variable\]  (in net_init)" -- \
	"$z" build "$kb" HEAD --target x86_64:defconfig
expect 0 "a root commit's warnings are all new" "x86_64:allnoconfig [0-9a-f]*: new-diagnostics  \[[0-9.]* s\]$" -- \
	"$z" build "$kb" HEAD~1 --target x86_64:allnoconfig
expect 0 "a stored build is reused" "parent [0-9a-f]*: ok" -- "$z" build "$kb" HEAD --target x86_64:defconfig
expect 1 "build of an unknown source" "neither a tree nor a repository" -- "$z" build "$scratch/nope" HEAD

# Boots: Debian's kernel through the real libvirt.
kernel=$(ls /boot/vmlinuz-* 2>/dev/null | head -1)
expect 2 "boot needs an image" "needs a BUILD-ID or an IMAGE" -- "$z" boot
expect 2 "boot refuses markup in the command line" "may not hold" -- "$z" boot "$kernel" --cmdline '</cmdline>'
expect 1 "boot of a missing image" "no kernel image at" -- "$z" boot "$scratch/nope"
expect 1 "boot of an unknown payload" "no payload named 'nope'" -- "$z" boot "$kernel" --payload nope
expect 0 "boot: one run, boot-ok" "seed 1: boot-ok: boot-ok" -- "$z" boot "$kernel" -n 1
printf '[boot]\nhosts = qemu:///system?socket=/nonexistent/sock\n' > "$scratch/nohost.conf"
expect 1 "boot with no reachable host is inconclusive" \
	"no conclusive boot: all 1 failed for infrastructure reasons" -- \
	--config="$scratch/nohost.conf" "$z" boot "$kernel" -n 1

tap_end
