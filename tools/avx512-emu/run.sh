#!/bin/bash
# run-avx512.sh BINARY [ARGS...]
# Runs a statically linked x86-64 Linux binary inside Bochs (CPU model with
# AVX-512) and returns its stdout/stderr and exit status to the host.
#
# Env overrides:
#   AVX512EMU_TIMEOUT  seconds to wait for the guest (default 1800)
#   AVX512EMU_CPU      Bochs cpu model (default corei7_skylake_x; tigerlake hangs the
#                      Debian 6.1 kernel early in boot with Bochs 2.7)
#   AVX512EMU_MEGS     guest RAM in MiB (default 1024)
#   AVX512EMU_IPS      Bochs ips value (default 100000000)
#   AVX512EMU_CACHE    cache dir (default ~/.cache/weft-avx512-emu)
#   AVX512EMU_KEEP=1   keep the per-run dir (bochs log, serial files) in /tmp
#   AVX512EMU_VERBOSE=1 print guest console + timings to stderr
#   AVX512EMU_ENV      NAME=VALUE words exported to the program (e.g. "PROPTEST_CASES=8")
#   AVX512EMU_FILES    absolute paths (files or directories) copied into the guest at the
#                      same paths (test data a binary reads from its source tree)
# Exit status: the program's exit status (128+N if killed by signal N);
#   125 = harness error, 124 = timeout.
set -u
CACHE=${AVX512EMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/weft-avx512-emu}
TIMEOUT=${AVX512EMU_TIMEOUT:-1800}
CPU=${AVX512EMU_CPU:-corei7_skylake_x}
MEGS=${AVX512EMU_MEGS:-1024}
IPS=${AVX512EMU_IPS:-100000000}
VERBOSE=${AVX512EMU_VERBOSE:-0}

die() { echo "run-avx512: $*" >&2; exit 125; }
log() { [ "$VERBOSE" = 1 ] && echo "run-avx512: $*" >&2; return 0; }

[ $# -ge 1 ] || die "usage: $0 BINARY [ARGS...]"
BIN=$1; shift
[ -f "$BIN" ] || die "no such file: $BIN"
for t in bochs-bin xorriso cpio sha256sum script; do
  command -v $t >/dev/null || die "missing $t (tools/avx512-emu/README.md gives the apt-get line)"
done
[ -f /usr/lib/ISOLINUX/isolinux.bin ] || die "missing isolinux (tools/avx512-emu/README.md gives the apt-get line)"

T0=$(date +%s.%N)
mkdir -p "$CACHE/iso" || die "cannot create $CACHE"

# ---- 1. kernel (Debian linux-image-amd64, extracted, not installed) ----
if [ ! -s "$CACHE/vmlinuz" ]; then
  log "fetching Debian kernel"
  kd=$(mktemp -d /tmp/avx512emu-k.XXXXXX)
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
  [ -n "$pkg" ] || die "cannot resolve linux-image-amd64 (run apt-get update)"
  (cd "$kd" && apt-get download "$pkg" >/dev/null 2>&1 && dpkg-deb -x ./*.deb x) || die "kernel download failed"
  cp "$kd"/x/boot/vmlinuz-* "$CACHE/vmlinuz.tmp" && mv "$CACHE/vmlinuz.tmp" "$CACHE/vmlinuz"
  rm -rf "$kd"
fi

# ---- 2. base initramfs tree (busybox-static + /init) ----
BASE=$CACHE/base
if [ ! -x "$BASE/init" ] || [ ! -x "$BASE/bin/busybox" ]; then
  file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' || die "need busybox-static"
  mkdir -p "$BASE"/{bin,proc,sys,dev,tmp,etc,root}
  cp /bin/busybox "$BASE/bin/busybox"
  cat > "$BASE/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
# fd 3 = program stdout (COM2), fd 4 = program stderr (COM3); raw so bytes pass unchanged
exec 3>/dev/ttyS1 4>/dev/ttyS2
stty -F /dev/ttyS1 raw -echo 115200
stty -F /dev/ttyS2 raw -echo 115200
if grep -qw avx512f /proc/cpuinfo; then f=yes; else f=no; fi
echo "@@GUEST uptime=$(cut -d' ' -f1 /proc/uptime) avx512f=$f flags:$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep avx512 | tr '\n' ' ')"
cd /root
/bin/sh /run.sh </dev/null >&3 2>&4
rc=$?
exec 3>&- 4>&-
echo "@@AVX512EMU-END rc=$rc uptime=$(cut -d' ' -f1 /proc/uptime)@@"
sync
poweroff -f
sleep 5
echo o > /proc/sysrq-trigger
EOF
  chmod +x "$BASE/init"
fi

# ---- 3. per-binary ISO (cached by hash of binary + args + base) ----
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
NAME=$(basename "$BIN" | sed 's/[^A-Za-z0-9._-]/_/g')
RUNSH=""
for e in ${AVX512EMU_ENV:-}; do RUNSH="${RUNSH}export $(q "$e"); "; done
RUNSH="${RUNSH}exec /root/$NAME"
for a in "$@"; do RUNSH="$RUNSH $(q "$a")"; done
CMDLINE="console=ttyS0,115200 quiet loglevel=3 panic=-1 nokaslr mitigations=off tsc=reliable no_timer_check nowatchdog nmi_watchdog=0 audit=0 selinux=0 apparmor=0 noresume rdinit=/init clearcpuid=323,321,515"
# clearcpuid=323,321,515 = xsaves,xsavec,pku: Bochs 2.7 reports wrong CPUID leaf 0xD
# sizes for the compacted XSAVE format and for PKRU; without this the kernel logs
# "XSAVE consistency problem" and disables XSAVE (=> no AVX/AVX-512 in user space).
[ "${AVX512EMU_DEBUG:-0}" = 1 ] && CMDLINE="${CMDLINE/quiet loglevel=3/loglevel=7 earlyprintk=serial,ttyS0,115200 initcall_debug}"
CMDLINE="$CMDLINE ${AVX512EMU_APPEND:-}"
FILES=${AVX512EMU_FILES:-}
for f in $FILES; do
  case "$f" in
    /tmp|/tmp/*|/proc/*|/sys/*|/dev/*) die "$f: the guest mounts its own /tmp, /proc, /sys, /dev";;
    /*) [ -e "$f" ] || die "no such file: $f";;
    *) die "not an absolute path: $f";;
  esac
done
KEY=$( { sha256sum < "$BIN"; printf '%s\n' "$RUNSH" "$CMDLINE"; sha256sum < "$BASE/init"; sha256sum < "$CACHE/vmlinuz"; [ -z "$FILES" ] || tar -cf - $FILES 2>/dev/null | sha256sum; } | sha256sum | cut -c1-24)
ISO=$CACHE/iso/$KEY.iso
if [ ! -s "$ISO" ]; then
  log "building ISO $ISO"
  bd=$(mktemp -d /tmp/avx512emu-b.XXXXXX)
  cp -a "$BASE" "$bd/root"
  cp "$BIN" "$bd/root/root/$NAME" && chmod 755 "$bd/root/root/$NAME"
  for f in $FILES; do
    mkdir -p "$bd/root$(dirname "$f")" && cp -a "$f" "$bd/root$f" || die "copying $f failed"
  done
  printf '%s\n' "$RUNSH" > "$bd/root/run.sh"
  mkdir -p "$bd/iso/isolinux"
  # uncompressed cpio: gzip decompression inside the emulator costs more than reading a bigger file
  (cd "$bd/root" && find . | cpio -o -H newc -R 0:0 --quiet) > "$bd/iso/initrd" || die "cpio failed"
  cp "$CACHE/vmlinuz" "$bd/iso/vmlinuz"
  cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 "$bd/iso/isolinux/"
  printf 'DEFAULT linux\nPROMPT 0\nTIMEOUT 0\nLABEL linux\n  KERNEL /vmlinuz\n  INITRD /initrd\n  APPEND %s\n' "$CMDLINE" > "$bd/iso/isolinux/isolinux.cfg"
  xorriso -as mkisofs -quiet -o "$ISO.tmp.$$" -b isolinux/isolinux.bin -c isolinux/boot.cat \
      -no-emul-boot -boot-load-size 4 -boot-info-table -R -J "$bd/iso" 2>"$bd/xorriso.err" \
    || { cat "$bd/xorriso.err" >&2; die "xorriso failed"; }
  mv "$ISO.tmp.$$" "$ISO"
  rm -rf "$bd"
  # keep the cache small: drop ISOs older than a day
  find "$CACHE/iso" -name '*.iso' -mtime +1 -delete 2>/dev/null
fi
T1=$(date +%s.%N)

# ---- 4. boot Bochs headless ----
RD=$(mktemp -d /tmp/avx512emu-r.XXXXXX)
cleanup() {
  if [ -n "${BPID:-}" ]; then
    BBPID=$(pgrep -f "bochs-bin -q -f $RD/bochsrc" 2>/dev/null | head -1)
    [ -n "$BBPID" ] && kill -9 "$BBPID" 2>/dev/null
    kill -9 "$BPID" 2>/dev/null
  fi
  if [ "${AVX512EMU_KEEP:-0}" = 1 ]; then echo "run-avx512: run dir kept: $RD" >&2; else rm -rf "$RD"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
: > "$RD/console.txt"; : > "$RD/stdout.bin"; : > "$RD/stderr.bin"
cat > "$RD/bochsrc" <<EOF
# generated by run-avx512.sh
config_interface: textconfig
display_library: term
cpu: model=$CPU, count=1, ips=$IPS, reset_on_triple_fault=0, ignore_bad_msrs=1
memory: guest=$MEGS, host=$MEGS
romimage: file=/usr/share/bochs/BIOS-bochs-latest, options=fastboot
vgaromimage: file=/usr/share/vgabios/vgabios.bin
vga: extension=vbe
ata0: enabled=1, ioaddr1=0x1f0, ioaddr2=0x3f0, irq=14
ata0-master: type=cdrom, path="$ISO", status=inserted
boot: cdrom
floppy_bootsig_check: disabled=1
clock: sync=none, time0=local
pci: enabled=1, chipset=i440fx
com1: enabled=1, mode=file, dev="$RD/console.txt"
com2: enabled=1, mode=file, dev="$RD/stdout.bin"
com3: enabled=1, mode=file, dev="$RD/stderr.bin"
mouse: enabled=0
speaker: enabled=0
sound: waveoutdrv=dummy, waveindrv=dummy, midioutdrv=dummy
private_colormap: enabled=0
log: $RD/bochs.log
panic: action=fatal
error: action=report
info: action=ignore
debug: action=ignore
EOF
# Debian's bochs is built with the internal debugger: it stops at a prompt before
# the first instruction. Feed it "continue", then "quit" once the guest powers off.
printf 'c\nquit\n' > "$RD/dbg.rc"
# The 'term' display needs a tty: give it a private pty via script(1); its screen goes to /dev/null.
export TERM=xterm
setsid script -q -e -c "exec bochs-bin -q -f '$RD/bochsrc' -rc '$RD/dbg.rc'" /dev/null </dev/null >/dev/null 2>&1 &
BPID=$!
log "bochs started (script pid $BPID), rundir $RD"

RC=
start=$(date +%s)
while :; do
  if grep -aq '@@AVX512EMU-END rc=' "$RD/console.txt" 2>/dev/null; then
    RC=$(grep -ao '@@AVX512EMU-END rc=[0-9]*' "$RD/console.txt" | head -1 | sed 's/.*rc=//')
    break
  fi
  if ! kill -0 "$BPID" 2>/dev/null; then break; fi
  if [ $(( $(date +%s) - start )) -ge "$TIMEOUT" ]; then RC=timeout; break; fi
  sleep 0.5
done
T2=$(date +%s.%N)
# give bochs a moment to power off by itself (flushes its files), then kill it
for i in $(seq 1 20); do kill -0 "$BPID" 2>/dev/null || break; sleep 0.25; done
BBPID=$(pgrep -f "bochs-bin -q -f $RD/bochsrc" 2>/dev/null | head -1)
# bochs (debugger build) ignores SIGTERM: use SIGKILL; its serial files are already written
[ -n "$BBPID" ] && kill -9 "$BBPID" 2>/dev/null
kill "$BPID" 2>/dev/null; wait "$BPID" 2>/dev/null; BPID=
sleep 0.2

cat "$RD/stdout.bin"
cat "$RD/stderr.bin" >&2
if [ "$VERBOSE" = 1 ] || [ -z "$RC" ] || [ "$RC" = timeout ]; then
  echo "----- guest console -----" >&2; tr -d '\r' < "$RD/console.txt" >&2
  echo "----- bochs log (tail) -----" >&2; tail -n 15 "$RD/bochs.log" >&2 2>/dev/null
fi
log "$(awk -v a="$T0" -v b="$T1" -v c="$T2" 'BEGIN{printf "timing: prepare %.1fs, boot+run %.1fs", b-a, c-b}') ($(tr -d '\r' < "$RD/console.txt" | grep -ao '@@GUEST uptime=[0-9.]*\|uptime=[0-9.]*@@' | tr '\n' ' '))"
case "$RC" in
  timeout) echo "run-avx512: timeout after ${TIMEOUT}s" >&2; exit 124;;
  "") echo "run-avx512: bochs exited without end marker" >&2; exit 125;;
  *) exit "$RC";;
esac
