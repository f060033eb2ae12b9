# /etc/cron.d/orgw: the orgw scorer every 3 hours, as the orgw user
# (orgw-score(8)).  flock -n: a run still going makes the next one exit at
# once.  The test -x keeps cron quiet once the package is removed but not
# purged.
0 */3 * * * orgw test -x /usr/bin/orgw-score && ORGW_CONFIG=/etc/orgw/orgw.conf flock -n /var/lib/orgw/orgw-score.lock /usr/bin/orgw-score >>/var/log/orgw/orgw-score.log 2>&1
