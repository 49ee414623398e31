#!/bin/sh
# zeroday report show: the mail about a real finding of `zeroday run` on
# the kbuild-like fixture tree. Its recipients (the author To; the
# committer, the Signed-off-by people, the tree's lists and maintainers,
# and those the tree's own get_maintainer.pl names for the culprit's
# files Cc; one address once whatever its case; never the bot; a hostile
# trailer and a hostile MAINTAINERS line left out; the cap; a private
# tree's reports to its maintainers only), its subject (with i/N for a
# culprit among a rebasable branch's new commits) and threading headers, the anatomy of the
# body (verdict, provenance, reproduce line, ">>" diagnostic with the
# source around it, the commit's new warning in the same mail, bisection,
# author and date, Reported-by, Closes and Fixes),
# the attachments; and the reproduce line, run in a checkout of the
# culprit, fails with the same error. Speaks TAP.
test_name=report
. "$ZERODAY_SRCDIR/tests/lib.sh"

kb="$scratch/kb"
kbuild_repo "$kb" root
# The tree's own get_maintainer.pl (the tests' stand-in) and MAINTAINERS:
# src/ has a maintainer, a reviewer, a list, the author again in capitals,
# the bot, and a line that is no address.
cp "$ZERODAY_SRCDIR/tests/data/maintainers/get_maintainer.pl" "$kb/scripts/"
cat > "$kb/MAINTAINERS" <<'EOF'
NET
M:	Nina Net <nina@example.org>
M:	ANN@EXAMPLE.COM
M:	not an address
R:	Rita Review <rita@example.org>
L:	netdev@example.org
L:	bot@example.org
F:	src/net.c

MAIN
M:	Mo Main <mo@example.org>
F:	src/main.c
EOF
git -C "$kb" add -A && git -C "$kb" commit -q --amend --no-edit
echo "/* innocent */" >> "$kb/src/main.c"
git -C "$kb" commit -q -am "main: innocent"
# The culprit adds an error and a warning: one report carries both.
sed -i 's/return ready - 1;/undeclared_counter++;\n\treturn ready - 1;/' "$kb/src/net.c"
sed -i 's/int ready = 1;/int ready = 1;\n\tint fresh;/' "$kb/src/net.c"
GIT_AUTHOR_NAME="Ann O'Author, Jr" GIT_AUTHOR_EMAIL=ann@example.com \
GIT_COMMITTER_NAME="Carl Committer" GIT_COMMITTER_EMAIL=carl@example.com \
	git -C "$kb" commit -q -a -F - <<'EOF'
net: count readiness

Count how often the device is ready.

Signed-off-by: Ann O'Author, Jr <ANN@example.com>
Signed-off-by: Sam Sign <sam@example.com>
Signed-off-by: zeroday <Bot@Example.org>
Signed-off-by: Eve <eve@example.net>, Mallory <mallory@example.net>
Signed-off-by: Carl Committer <carl@example.com>
EOF
err=$(git -C "$kb" rev-parse HEAD)
parent=$(git -C "$kb" rev-parse HEAD~1)
echo "/* innocent too */" >> "$kb/src/main.c"
git -C "$kb" commit -q -am "main: innocent too"
head=$(git -C "$kb" rev-parse HEAD)
printf '[git]\nallow-local-trees = true\n[mail]\naddress = bot@example.org\nname = Test Robot\narchive-url = https://lists.example.org/r/\n' \
	> "$scratch/z.conf"
# The web directory reports' full files go to, and its URL.
printf '[report]\nartifacts-dir = %s\nartifacts-url = https://zeroday.example.org/a\n' "$scratch/www" \
	>> "$scratch/z.conf"
z() { "$ZERODAY" --config="$scratch/z.conf" --state-dir="$scratch/state" "$@"; }
z init > /dev/null
z tree add kb "$kb" master --non-rebasable --target x86_64:defconfig \
	--list "Tree List <list@example.org>" --cc "Maint <maint@example.org>" \
	--to "maint@EXAMPLE.org" > /dev/null
# The root first, then the new head: its error is bisected over three commits.
git -C "$kb" update-ref refs/heads/master "$(git -C "$kb" rev-parse HEAD~3)"
z run --once --poll-interval 3600 > "$scratch/run1.log" 2>&1
git -C "$kb" update-ref refs/heads/master "$head"
z run --once --poll-interval 3600 > "$scratch/run2.log" 2>&1
check "zeroday run finds the error" test $? -eq 0
id=$(z status --json | sed 's/}, {/\n/g' | grep "\"culprit\": \"$err\", .*\"kind\": \"build-error\"" |
	sed -n 's/.*"id": \([0-9]*\), "tree".*/\1/p' | head -1)
check "status --json gives the finding's id" test -n "$id"

z report show "$id" > "$scratch/mail" 2> "$scratch/report.err"
check "report show prints the mail" test $? -eq 0
# The headers, unfolded.
sed '/^$/q' "$scratch/mail" | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n[ \t]\+/ /g' > "$scratch/headers"
header() { sed -n "s/^$1: //p" "$scratch/headers"; }
check "From: the bot, with its name" test "$(header From)" = "Test Robot <bot@example.org>"
check "To: the culprit's author" test "$(header To)" = "\"Ann O'Author, Jr\" <ann@example.com>"
check "Cc: the committer, the other signer, the tree's list and maintainer, get_maintainer.pl's; each once; not the bot" \
	test "$(header Cc)" = "Carl Committer <carl@example.com>, Sam Sign <sam@example.com>, Tree List <list@example.org>, Maint <maint@example.org>, Nina Net <nina@example.org>, Rita Review <rita@example.org>, netdev@example.org"
check "a trailer with two addresses is left out, and said so" \
	grep -q "a recipient is left out: refused address 'Eve <eve@example.net>, Mallory" "$scratch/report.err"
check "Subject: tree and branch, FILE:LINE:COL: error: message" \
	grep -q "^Subject: \[kb:master\] src/net.c:[0-9]*:[0-9]*: error: 'undeclared_counter' undeclared" \
	"$scratch/headers"
check "Message-ID made by zeroday, in the bot's domain" \
	grep -Eq '^Message-Id: <zeroday-preview-[0-9a-f]{32}@example.org>$' "$scratch/headers"
check "Auto-Submitted: auto-generated" grep -q '^Auto-Submitted: auto-generated$' "$scratch/headers"
check "multipart/mixed with the attachments" grep -q '^Content-Type: multipart/mixed' "$scratch/headers"
check "the verdict names the culprit and the target" \
	grep -q "^commit ${err%"${err#????????????}"} (\"net: count readiness\") breaks the build of kb" \
	"$scratch/mail"
check "provenance: the head" grep -q "^head:     $head$" "$scratch/mail"
check "provenance: the parent" grep -q "^parent:   $parent (builds without this error)" "$scratch/mail"
check "provenance: the compiler" grep -q "^compiler: gcc" "$scratch/mail"
check "the reproduce line" \
	grep -q '^        make O=build ARCH=x86_64 defconfig && make O=build ARCH=x86_64 -j$(nproc)$' \
	"$scratch/mail"
check "the error, prefixed >>" \
	grep -q "^>> src/net.c:[0-9]*:[0-9]*: error: 'undeclared_counter' undeclared" "$scratch/mail"
check "with the source line marked" grep -q '^   > *[0-9]*		undeclared_counter++;$' "$scratch/mail"
check "the same commit's new warning in the same report" \
	grep -q "^>> src/net.c:[0-9]*:[0-9]*: warning: unused variable 'fresh'" "$scratch/mail"
check "under one heading for both" grep -q '^The 1 new error and 1 new warning:$' "$scratch/mail"
check "the bisection, checked by a revert" grep -q "Checked: the head with" "$scratch/mail"
check "the author and date" grep -q "^    Author: \"Ann O'Author, Jr\" <ann@example.com>" "$scratch/mail"
check "Reported-by" grep -q '^Reported-by: Test Robot <bot@example.org>$' "$scratch/mail"
check "Closes: the archive link of this mail" \
	grep -Eq '^Closes: https://lists.example.org/r/zeroday-preview-[0-9a-f]{32}@example.org$' "$scratch/mail"
check "Fixes: the culprit, verified" \
	grep -q "^Fixes: ${err%"${err#????????????}"} (\"net: count readiness\")$" "$scratch/mail"
check "the config attached, gzipped" \
	grep -q '^Content-Disposition: attachment; filename=config.gz$' "$scratch/mail"
check "the build log attached" grep -q '^Content-Disposition: attachment; filename=build.log$' "$scratch/mail"
check "as the lines around each new diagnostic" \
	grep -q '^\[zeroday: the lines around each new diagnostic\]$' "$scratch/mail"
check "the mail is under [mail] max-bytes (100000)" test "$(wc -c < "$scratch/mail")" -lt 100000
check "the bisection log attached" grep -q '^Content-Disposition: attachment; filename=bisect.log$' "$scratch/mail"
# The text part: after the first boundary and its headers, up to the next.
awk '/^--zeroday-/ { part++; head = 1; next } part == 1 && head && /^$/ { head = 0; next }
     part == 1 && !head { print }' "$scratch/mail" > "$scratch/body"
check "the text part is there" grep -q '^Hi Ann' "$scratch/body"
check "no prose line over 72 columns (code, logs and links aside)" \
	sh -c "grep -v '^        \|^>>\|^   [> ] \|^Closes: \|^    \|^tree: \|^head: \|^commit: \|^parent: ' '$scratch/body' | awk 'length > 72 { print; bad = 1 } END { exit bad }'"

# The reproduce line, as a developer pastes it, fails the same way.
line=$(sed -n 's/^        \(make O=build .*\)$/\1/p' "$scratch/mail" | head -1)
git clone -q "$kb" "$scratch/dev"
git -C "$scratch/dev" checkout -q "$err"
(cd "$scratch/dev" && LC_ALL=C sh -c "$line") > "$scratch/repro.log" 2>&1
check "the reproduce line fails" test $? -ne 0
check "with the reported error" grep -q "error: 'undeclared_counter' undeclared" "$scratch/repro.log"
git -C "$scratch/dev" checkout -q "$parent"
rm -rf "$scratch/dev/build"
(cd "$scratch/dev" && LC_ALL=C sh -c "$line") > "$scratch/repro-parent.log" 2>&1
check "and passes on the parent" test $? -eq 0

# The outbox: the report was committed with the finding and delivered
# to the Maildir under the state directory, once.
z outbox --json | sed 's/}, {/\n/g' > "$scratch/outbox1"
check "the outbox holds one mail" test "$(grep -c '"message_id"' "$scratch/outbox1")" -eq 1
check "the report, sent" grep -q "\"finding\": $id, \"kind\": \"report\", \"state\": \"sent\"" "$scratch/outbox1"
mid=$(sed -n 's/.*"message_id": "\([^"]*\)".*/\1/p' "$scratch/outbox1")
path=$(sed -n 's/.*"path": "\([^"]*\)".*/\1/p' "$scratch/outbox1")
check "its Message-ID is zeroday's, per finding" sh -c 'expr "$1" : "$2" > /dev/null' - "$mid" "zeroday-f$id-[0-9a-f]\{32\}@example.org$"
check "delivered into the Maildir's new/" test -f "$path" -a "$(dirname "$path")" = "$scratch/state/outbox/new"
check "the delivered mail carries that Message-ID" grep -q "^Message-Id: <$mid>\$" "$path"
token=${mid%@*}
check "it links its full files under [report] artifacts-url" \
	grep -q "^The whole files: https://zeroday.example.org/a/$token/\$" "$path"
check "which zeroday wrote into artifacts-dir: the config, the build log, the bisection log" \
	test -s "$scratch/www/$token/config" -a -s "$scratch/www/$token/bisect.log" \
	-a -s "$scratch/www/$token/build.log"
check "the whole build log, with the error, where the mail had the lines around it" \
	grep -q "error: 'undeclared_counter' undeclared" "$scratch/www/$token/build.log"
config=$(sqlite3 "$scratch/state/zeroday.db" \
	"SELECT config_path FROM builds WHERE commit_id = '$err' ORDER BY id DESC LIMIT 1")
check "the config, the culprit's build's whole" cmp -s "$config" "$scratch/www/$token/config"
check "a preview links nothing: nothing was written for it" \
	sh -c '! grep -q "^The whole files:" "$1"' - "$scratch/mail"
check "and the recipients the outbox lists" grep -q '"to:\\"Ann O'"'"'Author, Jr\\" <ann@example.com>", "cc:Carl Committer <carl@example.com>"' "$scratch/outbox1"
z run --once --poll-interval 3600 > "$scratch/run3.log" 2>&1
check "a second run mails nothing again" test "$(ls "$scratch/state/outbox/new" | wc -l)" -eq 1
# A crash after the delivery and before the store recorded it: the row is
# queued again; the next run finds the file delivered and makes no copy.
sqlite3 "$scratch/state/zeroday.db" "UPDATE outbox SET state = 'queued', path = NULL"
z run --once --poll-interval 3600 > "$scratch/run4.log" 2>&1
check "after a crash between the sink and the store: no second copy" \
	test "$(ls "$scratch/state/outbox/new" | wc -l)" -eq 1
check "and the mail is recorded sent" test "$(z outbox --json | grep -c '"state": "sent"')" -eq 1
z status --json > "$scratch/status1.json"
check "status: the report's push-to-report time, the one measured" \
	grep -q '"push_to_report": {"from": "first_poll", "count": 1, "p50": \([0-9]*\), "p90": \1}' \
	"$scratch/status1.json"
check "status: the outbox" \
	grep -q '"outbox": {"queued": 0, "held": 0, "sent": 1, "failed": 0, "oldest_queued_age": null}' \
	"$scratch/status1.json"

# The fix: the error reverted on top. The finding is fixed, and the
# follow-up goes in the report's thread, to the same people.
git -C "$kb" revert --no-edit "$err" > /dev/null
fix=$(git -C "$kb" rev-parse HEAD)
z run --once --poll-interval 3600 > "$scratch/run5.log" 2>&1
z outbox --json | sed 's/}, {/\n/g' > "$scratch/outbox2"
check "a fixed follow-up is queued and sent" \
	grep -q "\"finding\": $id, \"kind\": \"fixed\", \"state\": \"sent\"" "$scratch/outbox2"
fixed=$(grep '"kind": "fixed"' "$scratch/outbox2" | sed -n 's/.*"path": "\([^"]*\)".*/\1/p')
check "in reply to the report" grep -q "^In-Reply-To: <$mid>\$" "$fixed"
check "References: the report" grep -q "^References: <$mid>\$" "$fixed"
check "Subject: Re: the report's" grep -q "^Subject: Re: \[kb:master\] src/net.c" "$fixed"
check "to the report's author" grep -q "^To: \"Ann O'Author, Jr\" <ann@example.com>\$" "$fixed"
check "naming the fixing commit" grep -q "fixed by commit $(echo "$fix" | cut -c1-12)" "$fixed"
fixed_mid=$(sed -n 's/^Message-Id: <\(.*\)>$/\1/p' "$fixed")
check "a reply to the follow-up finds the finding" \
	test "$(z report find "<$fixed_mid>" "<$mid>")" = "$id"
z report find "<someone-else@example.org>" > /dev/null 2>&1
check "a Message-ID of no report finds none" test $? -eq 1

# A private tree: its maintainers only, To; public again: as before.
z tree set kb --private > /dev/null
z report show "$id" > "$scratch/private" 2>/dev/null
sed '/^$/q' "$scratch/private" | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n[ \t]\+/ /g' > "$scratch/headers"
check "private: To the tree's maintainers only" test "$(header To)" = "Maint <maint@example.org>"
check "private: no Cc (no author, list, signer or get_maintainer.pl)" test -z "$(header Cc)"
z tree set kb --public > /dev/null
z report show "$id" > "$scratch/public" 2>/dev/null
sed '/^$/q' "$scratch/public" | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n[ \t]\+/ /g' > "$scratch/headers"
check "public again: To the author" test "$(header To)" = "\"Ann O'Author, Jr\" <ann@example.com>"
check "public again: the list Cc'd" sh -c 'echo "$1" | grep -q "Tree List <list@example.org>"' - "$(header Cc)"

# A rebasable tree measured against kb/master: its branch brings three
# new commits, the second breaks the build: [topic:feature 2/3].
topic="$scratch/topic"
git clone -q "$kb" "$topic"
git -C "$topic" checkout -q -b feature
echo "/* one */" >> "$topic/src/main.c"
git -C "$topic" commit -q -am "main: one"
sed -i 's/return ready - 1;/topic_counter++;\n\treturn ready - 1;/' "$topic/src/net.c"
git -C "$topic" commit -q -am "net: two"
broken=$(git -C "$topic" rev-parse HEAD)
echo "/* three */" >> "$topic/src/main.c"
git -C "$topic" commit -q -am "main: three"
z tree add topic "$topic" feature --base kb/master --target x86_64:defconfig > /dev/null
z run --once --poll-interval 3600 > "$scratch/run-topic.log" 2>&1
tid=$(z status --json | sed 's/}, {/\n/g' | grep "\"culprit\": \"$broken\", .*\"kind\": \"build-error\"" |
	sed -n 's/.*"id": \([0-9]*\), "tree".*/\1/p' | head -1)
check "the rebasable branch's error is found" test -n "$tid"
z report show "$tid" > "$scratch/topic-mail" 2>/dev/null
check "Subject: [topic:feature 2/3]: the culprit is the second of three new commits" \
	grep -q "^Subject: \[topic:feature 2/3\] src/net.c:[0-9]*:[0-9]*: error: 'topic_counter' undeclared" \
	"$scratch/topic-mail"
check "provenance: the base, and the commit's place in the series" \
	sh -c "grep -q '^base:     kb/master ' '$scratch/topic-mail' && grep -q '^commit:   $broken \\[2/3\\]\$' '$scratch/topic-mail'"
check "the non-rebasable tree's subject has no i/N" grep -q "^Subject: \[kb:master\] src/net.c" "$scratch/public"

# The branch rebased without its culprit: the report's thread is told,
# once, and the finding is closed as dropped.
topic_mid=$(z outbox --json | sed 's/}, {"id"/\n{"id"/g' | grep "\"finding\": $tid, \"kind\": \"report\"" |
	sed -n 's/.*"message_id": "\([^"]*\)".*/\1/p')
git -C "$topic" rebase -q --onto "$broken~1" "$broken" feature
z run --once --poll-interval 3600 > "$scratch/run-drop.log" 2>&1
z outbox --json | sed 's/}, {"id"/\n{"id"/g' | grep "\"finding\": $tid, \"kind\": \"dropped\"" > "$scratch/dropped"
check "rebased without the culprit: a dropped follow-up is sent" grep -q '"state": "sent"' "$scratch/dropped"
dropped=$(sed -n 's/.*"path": "\([^"]*\)".*/\1/p' "$scratch/dropped")
check "in the report's thread" grep -q "^In-Reply-To: <$topic_mid>\$" "$dropped"
check "saying the commit left the branch" grep -q "is no longer on topic feature" "$dropped"
check "the finding is dropped" sh -c "'$ZERODAY' --config='$scratch/z.conf' --state-dir='$scratch/state' status --json | grep -q '\"id\": $tid, .*\"state\": \"dropped\"'"
z run --once --poll-interval 3600 > /dev/null 2>&1
check "and told once" test "$(z outbox --json | grep -o '"kind": "dropped"' | wc -l)" -eq 1

# One commit, two new errors: one report carries both; each error's fix
# is said in that report's thread.
two="$scratch/two"
git clone -q "$kb" "$two"
git -C "$two" checkout -q -b two "$(git -C "$kb" rev-parse "$err~1")"
sed -i 's/return ready - 1;/first_missing++;\n\treturn ready - 1;/' "$two/src/net.c"
echo 'void second(void) { second_missing++; }' >> "$two/src/main.c"
git -C "$two" commit -q -am "two: break twice"
double=$(git -C "$two" rev-parse HEAD)
z tree add two "$two" two --non-rebasable --target x86_64:defconfig > /dev/null
git -C "$two" update-ref refs/heads/two "$double~1"
z run --once --poll-interval 3600 > "$scratch/run-two1.log" 2>&1
git -C "$two" update-ref refs/heads/two "$double"
z run --once --poll-interval 3600 > "$scratch/run-two2.log" 2>&1
z status --json | sed 's/}, {/\n/g' | grep "\"culprit\": \"$double\", .*\"kind\": \"build-error\"" > "$scratch/two-findings"
check "two findings for the two errors" test "$(wc -l < "$scratch/two-findings")" -eq 2
z outbox --json | sed 's/}, {"id"/\n{"id"/g' > "$scratch/two-outbox"
first=$(sed -n 's/.*"id": \([0-9]*\), "tree".*/\1/p' "$scratch/two-findings" | sort -n | head -1)
check "one report for both" test "$(grep -c "\"finding\": $first, \"kind\": \"report\"" "$scratch/two-outbox")" -eq 1
check "and no second one for the tree" \
	test "$(grep '"kind": "report"' "$scratch/two-outbox" | grep -c '"subject": "\[two:two\]')" -eq 1
two_path=$(grep "\"finding\": $first, \"kind\": \"report\"" "$scratch/two-outbox" | sed -n 's/.*"path": "\([^"]*\)".*/\1/p')
two_mid=$(grep "\"finding\": $first, \"kind\": \"report\"" "$scratch/two-outbox" | sed -n 's/.*"message_id": "\([^"]*\)".*/\1/p')
check "it says there are two" grep -q "^The 2 new errors:\$" "$two_path"
check "and shows both, prefixed >>" \
	sh -c "grep -q \"^>> src/net.c:[0-9]*:[0-9]*: error: 'first_missing' undeclared\" '$two_path' && grep -q \"^>> src/main.c:[0-9]*:[0-9]*: error: 'second_missing' undeclared\" '$two_path'"
git -C "$two" revert --no-edit "$double" > /dev/null
z run --once --poll-interval 3600 > "$scratch/run-two3.log" 2>&1
z outbox --json | sed 's/}, {"id"/\n{"id"/g' | grep '"kind": "fixed"' | grep "$two_mid" > "$scratch/two-fixed"
check "both errors fixed" \
	test "$(z status --json | sed 's/}, {/\n/g' | grep "\"culprit\": \"$double\", .*\"kind\": \"build-error\"" |
		grep -c '"state": "fixed"')" -eq 2
check "one follow-up, the report's, in its thread" \
	test "$(grep -c "\"finding\": $first, \"kind\": \"fixed\", .*\"in_reply_to\": \"$two_mid\"" "$scratch/two-fixed")" -eq 1 -a \
	"$(wc -l < "$scratch/two-fixed")" -eq 1

# A tree that asks for clean-build mail gets one for its clean head, to
# its list; the others get none.
z tree add quiet "$kb" master --non-rebasable --target x86_64:defconfig --mail-clean \
	--list "Quiet List <quiet@example.org>" > /dev/null
z run --once --poll-interval 3600 > "$scratch/run-quiet.log" 2>&1
z outbox --json | sed 's/}, {"id"/\n{"id"/g' | grep '"kind": "clean"' > "$scratch/clean"
check "one clean-build mail, for the tree that asks" test "$(wc -l < "$scratch/clean")" -eq 1
check "to its list" grep -q '"recipients": \["to:Quiet List <quiet@example.org>"\]' "$scratch/clean"
check "naming the head and the target" \
	grep -q "\"subject\": \"\[quiet:master\] $(git -C "$kb" rev-parse --short=12 HEAD): clean on x86_64:defconfig\"" "$scratch/clean"

# A cap on the recipients; an unknown finding; an edited template with a mistake.
printf '[mail]\ncc-max = 2\n' >> "$scratch/z.conf"
z report show "$id" > "$scratch/capped" 2>/dev/null
check "at most cc-max recipients, the author first" \
	test "$(sed -n 's/^To: //p' "$scratch/capped"), $(sed -n 's/^Cc: //p' "$scratch/capped")" = \
	"\"Ann O'Author, Jr\" <ann@example.com>, Carl Committer <carl@example.com>"
z report show 999 > /dev/null 2> "$scratch/missing.err"
check "an unknown finding is an error" test $? -eq 1
check "that says so" grep -q "no finding 999" "$scratch/missing.err"
mkdir "$scratch/templates"
cp "$ZERODAY_SRCDIR"/templates/*.txt "$scratch/templates/"
sed -i 's/{{culprit_short}}/{{culprit_shrot}}/' "$scratch/templates/build-error.txt"
printf 'templates = %s\n' "$scratch/templates" >> "$scratch/z.conf"
z report show "$id" > /dev/null 2> "$scratch/template.err"
check "a template with an unknown field is refused" test $? -eq 1
check "naming its file and line" \
	grep -q "build-error.txt:[0-9]*: unknown field \"culprit_shrot\"" "$scratch/template.err"
z run --once --poll-interval 3600 > /dev/null 2> "$scratch/run-template.err"
check "zeroday run refuses to start with it" test $? -eq 1
check "and says where the mistake is" \
	grep -q "build-error.txt:[0-9]*: unknown field \"culprit_shrot\"" "$scratch/run-template.err"
tap_end
