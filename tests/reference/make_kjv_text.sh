#!/usr/bin/env bash
# Writes data/kjv_genesis.txt: the first 400 verses of Genesis (King James Version, public
# domain) from Debian's bible-kjv-text package, one verse per line, without verse numbers or
# chapter headings. The perplexity tests use its first 8192 tokens (context 512).
#   apt-get install bible-kjv bible-kjv-text && tests/reference/make_kjv_text.sh
set -euo pipefail
cd "$(dirname "$0")"
bible -l100000 "gen1:1-50:26" | grep -Ev '^(Genesis [0-9]+)?$' | sed -E 's/^ *[0-9]+ //' \
    | sed -n '1,400p' > data/kjv_genesis.txt
echo "wrote data/kjv_genesis.txt ($(wc -c < data/kjv_genesis.txt) bytes; bible-kjv-text $(dpkg-query -W -f='${Version}' bible-kjv-text))"
