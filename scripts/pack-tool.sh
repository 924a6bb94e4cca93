#!/usr/bin/env bash
# Packs clrprof as a .NET tool: OUTDIR/clrprof.<version>.nupkg, whose command `clrprof` execs
# the native CLI it carries (linux-x64), with the profiler library beside it.
#
#   scripts/pack-tool.sh OUTDIR            # release build of the CLI and the agent, then pack
#   scripts/pack-tool.sh OUTDIR --debug    # pack the debug build already in the target dir (tests)
#
# Then: dotnet tool install -g clrprof --add-source OUTDIR
set -euo pipefail
out="${1:?usage: scripts/pack-tool.sh OUTDIR [--debug]}"
profile=release
if [ "${2:-}" = "--debug" ]; then
  profile=debug
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
if [ "$profile" = release ]; then
  cargo build --release -p clrprof-cli -p clrprof-agent
fi
native="$target/$profile"
for f in clrprof libclrprof_profiler.so; do
  [ -f "$native/$f" ] || { echo "pack-tool: $native/$f is missing (cargo build${profile/release/ --release} -p clrprof-cli -p clrprof-agent)" >&2; exit 1; }
done
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
mkdir -p "$out"
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
dotnet pack packaging/dotnet-tool/clrprof.csproj -c Release -o "$out" \
  --artifacts-path "$target/dotnet-tool" \
  -p:NativeDir="$native" -p:ClrprofVersion="$version" -nologo -v quiet
echo "$out/clrprof.$version.nupkg"
