# Sourced by test.sh and demo.sh: METEOR (and SPICE) run on Java; install a JRE where none is.
if ! command -v java >/dev/null 2>&1; then
  echo "java not found: installing default-jre-headless (METEOR needs it)"
  (apt-get install -y -q default-jre-headless >/dev/null 2>&1 \
    || (apt-get update -q >/dev/null && apt-get install -y -q default-jre-headless >/dev/null)) \
    || echo "could not install java; METEOR will be reported unavailable and its tests skipped"
fi
