#!/usr/bin/env bash
# scripts/gpu-check.sh's dry run in a bare root that has what the GPU
# machines have and nothing more: a Debian 12 minbase root (debootstrap) with
# g++, cmake, ninja-build and python3 only (no -dev package beyond what g++
# pulls, no torch), the host's CUDA toolkit bind-mounted read-only at
# /usr/local/cuda, no network. It proves that the tree as committed plus
# third_party/ (scripts/bundle-third-party.sh) configures, builds and passes
# the tests that need no device there, with nothing taken from this machine.
#
#   scripts/gpu-check-bare-root.sh [--keep-build] [--root-only] [ROOT]
#       ROOT          default /var/tmp/kfuse-bare-root; made on the first run
#                     (a few minutes, network), reused afterwards
#       --root-only   make (or check) the root and stop
#       --keep-build  keep ROOT/src/kfuse/build-gpu from the last run and copy
#                     only the files that changed (the default is a clean build)
#
# Needs root (debootstrap, chroot, mounts), debootstrap (installed with
# apt-get when missing) and, for the bundle, kfuse's dependencies on this
# machine (scripts/install-deps.sh). The results stay in
# ROOT/src/results/<UTC date>/ (summary.md, summary.json, ctest.log, ctest.xml).
# It exits non-zero when the configure, the build or a test that needs no
# device fails, when a GPU test fails without being skipped, or when the root
# holds a package it must not.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
keep_build=0
root_only=0
root=""
for arg in "$@"; do
  case "$arg" in
    --keep-build) keep_build=1 ;;
    --root-only) root_only=1 ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu-check-bare-root: unknown option $arg" >&2; exit 2 ;;
    *) root="$arg" ;;
  esac
done
root="${root:-/var/tmp/kfuse-bare-root}"
case "$root" in /*) ;; *) root="$PWD/$root" ;; esac
root="${root%/}"
[ "$root" != "" ] && [ "$root" != / ] || { echo "gpu-check-bare-root: refusing ROOT=/" >&2; exit 2; }

suite=bookworm
packages=(g++ cmake ninja-build python3)
# What g++ itself pulls in: the C library's and the compiler's headers.
allowed_dev='^(libc6-dev|libstdc\+\+-12-dev|libgcc-12-dev|linux-libc-dev|libcrypt-dev|libnsl-dev|libtirpc-dev)$'
# kfuse's dependencies on a development machine: none may be in the root.
forbidden_pkg='(onnx|protobuf|nlohmann|cli11|zlib1g-dev|googletest|gtest|llvm|clang|openblas|blas|lapack|numpy|torch|ccache)'
forbidden_files=(/usr/include/nlohmann /usr/include/CLI /usr/include/zlib.h /usr/include/google/protobuf
                 /usr/src/googletest /usr/include/gtest /usr/lib/x86_64-linux-gnu/cmake/GTest
                 /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 /usr/lib/llvm-16 /usr/lib/llvm-14)
env_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

say() { echo "gpu-check-bare-root: $*" >&2; }
die() { say "$*"; exit 1; }
now() { date +%s; }
t_start=$(now)

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, bind mounts)"
for tool in chroot unshare mount umount findmnt; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap >/dev/null
fi

# Mounts made here, unmounted in reverse order on every exit; and any left
# under ROOT by a run that was killed before its trap ran.
mounts=()
unmount_all() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" || say "could not unmount ${mounts[i]}"
  done
  mounts=()
}
unmount_stale() {
  local m
  { findmnt -rn -o TARGET | grep -E "^$root(/|$)" || true; } | sort -r | while read -r m; do
    say "unmounting $m, left by an earlier run"
    umount "$m" 2>/dev/null || umount -l "$m"
  done
  ! findmnt -rn -o TARGET | grep -qE "^$root(/|$)" || die "mounts remain under $root"
}
trap unmount_all EXIT
trap 'exit 130' INT TERM
bind() {  # bind SOURCE TARGET [ro]
  mkdir -p "$2"
  mount --bind "$1" "$2"
  mounts+=("$2")
  # Nothing mounted under it may reach the source (a shared /dev on systemd).
  mount --make-private "$2"
  if [ "${3:-}" = ro ]; then mount -o remount,bind,ro "$2"; fi
}
mount_system() {  # /proc, /dev, a /dev/shm and /dev/pts of its own, for apt and the check
  mkdir -p "$root/proc"
  mount -t proc proc "$root/proc"
  mounts+=("$root/proc")
  bind /dev "$root/dev"
  mount -t tmpfs -o mode=1777,size=1g tmpfs "$root/dev/shm"
  mounts+=("$root/dev/shm")
  mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"
  mounts+=("$root/dev/pts")
}
in_root() { chroot "$root" /usr/bin/env -i PATH="$env_path" HOME=/root LANG=C.UTF-8 "$@"; }

unmount_stale

# --- 1. the root --------------------------------------------------------------
ready="$root/.kfuse-bare-root"
partial="$root/.kfuse-bare-root.partial"
t_root=$(now)
if [ -f "$ready" ]; then
  say "reusing the root in $root ($(cat "$ready"))"
else
  if [ -d "$root" ] && [ -n "$(ls -A "$root")" ] && [ ! -f "$partial" ]; then
    die "$root exists and is not a root this script made: give another ROOT or remove it"
  fi
  if [ -f "$partial" ]; then
    say "removing the half-made root an interrupted run left in $root"
    rm -rf --one-file-system "$root"
  fi
  # Debian's mirror, as apt here is configured (deb.debian.org otherwise).
  mirror="${KFUSE_DEBIAN_MIRROR:-}"
  if [ -z "$mirror" ]; then
    mirror="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
              grep -vE '^[[:space:]]*#' | grep -oE 'https?://[^[:space:]]+' | grep -E '/debian/?$' | head -1 || true)"
  fi
  mirror="${mirror:-http://deb.debian.org/debian}"
  mkdir -p "$root"
  touch "$partial"
  say "debootstrap --variant=minbase $suite $root $mirror"
  debootstrap --variant=minbase --arch=amd64 "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
    { tail -20 "$root.debootstrap.log" >&2; die "debootstrap failed (log: $root.debootstrap.log)"; }
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mount_system
  say "apt-get install --no-install-recommends ${packages[*]}"
  in_root DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  in_root DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null
  in_root apt-get clean
  unmount_all
  in_root dpkg-query -W -f='${Package} ${Version}\n' "${packages[@]}" | tr '\n' ' ' >"$ready"
  rm -f "$partial"
  say "made the root in $(( $(now) - t_root )) s"
fi

# What the root holds: the four packages and what they pull, nothing else.
installed="$(in_root dpkg-query -W -f='${db:Status-Status} ${Package}\n' | awk '$1 == "installed" {print $2}' | sed 's/:amd64$//')"
bad_dev="$(grep -E -- '-dev$' <<<"$installed" | grep -vE "$allowed_dev" || true)"
bad_pkg="$(grep -E "$forbidden_pkg" <<<"$installed" || true)"
[ -z "$bad_dev" ] || die "the root has -dev packages g++ does not pull in: $(echo $bad_dev)"
[ -z "$bad_pkg" ] || die "the root has packages the GPU machines lack: $(echo $bad_pkg)"
for f in "${forbidden_files[@]}"; do
  [ ! -e "$root$f" ] || die "the root has $f, which the GPU machines lack"
done
say "root checked: $(wc -l <<<"$installed") packages, -dev ones only $(grep -E -- '-dev$' <<<"$installed" | tr '\n' ' ')"
[ "$root_only" = 0 ] || exit 0

# --- 2. the CUDA toolkit, read-only, where NVIDIA's installer puts it ---------------
[ -e /usr/local/cuda ] || die "no CUDA toolkit in /usr/local/cuda on this machine"
cuda="$(readlink -f /usr/local/cuda)"
[ -x "$cuda/bin/nvcc" ] || [ -e "$cuda/include/nvrtc.h" ] || die "$cuda does not look like a CUDA toolkit"
bind "$cuda" "$root$cuda" ro
if [ "$cuda" != /usr/local/cuda ]; then
  [ -d "$root/usr/local/cuda" ] && [ ! -L "$root/usr/local/cuda" ] && rmdir "$root/usr/local/cuda"
  ln -sfn "$cuda" "$root/usr/local/cuda"
fi

# --- 3. the tree: the committed files and the bundle --------------------------------
t_copy=$(now)
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  say "warning: $repo has uncommitted changes; the dry run takes HEAD ($(git -C "$repo" rev-parse --short HEAD)) without them"
fi
src="$root/src/kfuse"
new="$root/src/kfuse.new"
rm -rf "$new"
mkdir -p "$new"
git -C "$repo" archive --format=tar HEAD | tar -x -C "$new"
"$repo/scripts/bundle-third-party.sh" "$new/third_party" >/dev/null
if [ "$keep_build" = 1 ] && [ -d "$src/build-gpu" ]; then
  # Unchanged files keep the old copy's times, so ninja rebuilds only what changed.
  (cd "$new" && find . -type f -print0) | while IFS= read -r -d '' f; do
    if cmp -s "$new/$f" "$src/$f"; then touch -r "$src/$f" "$new/$f"; fi
  done
  mv "$src/build-gpu" "$new/build-gpu"
  say "kept build-gpu from the last run"
fi
rm -rf "$src"
mv "$new" "$src"
say "copied $(git -C "$repo" rev-parse --short HEAD) and third_party/ ($(du -sh "$src/third_party" | cut -f1), scripts/bundle-third-party.sh) to $src in $(( $(now) - t_copy )) s"

# --- 4. gpu-check.sh, without network ---------------------------------------------
mount_system
stamp="$(date -u +%Y%m%d-%H%M%S)"
results="/src/results/$stamp"
t_check=$(now)
status=0
unshare --net chroot "$root" /usr/bin/env -i PATH="$env_path" HOME=/root LANG=C.UTF-8 /bin/bash -c '
  set -e
  ifaces="$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | tr "\n" " ")"
  [ "$ifaces" = "lo " ] || { echo "gpu-check-bare-root: network interfaces in the root: $ifaces" >&2; exit 1; }
  echo "gpu-check-bare-root: in the root: interfaces: $ifaces; $(g++ --version | head -1); $(cmake --version | head -1); ninja $(ninja --version); $(python3 --version)" >&2
  cd /src/kfuse && exec scripts/gpu-check.sh "$1"' bash "$results" || status=$?
t_end=$(now)
unmount_all

# --- 5. what it reported --------------------------------------------------------------
out="$root$results"
echo
echo "== gpu-check.sh exited $status after $(( t_end - t_check )) s; results in $out"
if [ -f "$out/summary.md" ]; then cat "$out/summary.md"; else say "no summary.md"; status=1; fi
log="$out/ctest.log"
if [ -f "$log" ]; then
  passed_cuda=$(grep -cE 'Test +#[0-9]+: cuda\..* Passed' "$log" || true)
  passed_gpu=$(grep -cE 'Test +#[0-9]+: gpu\..* Passed' "$log" || true)
  skipped_gpu=$(grep -cE 'Test +#[0-9]+: gpu\..*Skipped' "$log" || true)
  echo "- cuda.* (no device needed): $passed_cuda passed; gpu.*: $passed_gpu passed, $skipped_gpu skipped"
  echo "- tests that did not pass (skipped or failed):"
  grep -E 'Test +#[0-9]+: ' "$log" | grep -vE ' Passed ' | sed 's/^ */    /' || echo "    none"
  reasons="$root/src/kfuse/build-gpu/Testing/Temporary/LastTest.log"
  if [ "$skipped_gpu" -gt 0 ] && [ -f "$reasons" ]; then
    echo "- why the GPU tests skipped:"
    grep -A1 -E ': Skipped$' "$reasons" | grep -vE ': Skipped$|^--$' | sort | uniq -c | sed 's/^ */    /'
  fi
  [ "$passed_cuda" -gt 0 ] || { say "no cuda.* test passed"; status=1; }
  if ! command -v nvidia-smi >/dev/null 2>&1 && [ "$passed_gpu" -gt 0 ]; then
    say "GPU tests passed without a GPU (they should skip)"; status=1
  fi
fi
echo "- times: root $(( t_copy - t_root )) s, copy $(( t_check - t_copy )) s, gpu-check.sh $(( t_end - t_check )) s, all $(( t_end - t_start )) s"
echo "- root: $(du -sh --one-file-system "$root" | cut -f1) ($(du -sh "$src/build-gpu" 2>/dev/null | cut -f1) of it build-gpu; CUDA not copied)"
exit "$status"
