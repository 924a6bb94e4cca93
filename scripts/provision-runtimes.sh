#!/usr/bin/env bash
# Provisions the .NET 8 and 9 runtimes the acceptance tests run on, next to the installed
# .NET (10) SDK, under a private DOTNET_ROOT:
#
#   <cache>/dotnet/dotnet                          copy of the system muxer (a symlink would
#                                                  resolve back to the system install)
#   <cache>/dotnet/{host,sdk,packs,sdk-manifests}  symlinks into the system install
#   <cache>/dotnet/shared/Microsoft.NETCore.App/   the system's runtimes (symlinks) and the
#                                                  8/9 runtimes unpacked from NuGet's
#                                                  Microsoft.NETCore.App.Runtime.linux-x64
#
# `DOTNET_ROOT=<cache>/dotnet <cache>/dotnet/dotnet app.dll` then runs a framework-dependent
# net8.0 / net9.0 / net10.0 app. Idempotent (a finished runtime has a `.complete` marker),
# safe to run concurrently (flock), and offline once provisioned. The last line printed on
# stdout is the DOTNET_ROOT; everything else goes to stderr.
#
# usage: scripts/provision-runtimes.sh [CACHE_DIR]   (default: <cargo target dir>/dotnet-runtimes)
# env:   CLRPROF_RUNTIME_VERSIONS  runtimes to provision (default: "8.0.33 9.0.22")
#        CLRPROF_SYSTEM_DOTNET     the installed .NET root (default: from `dotnet` on PATH)
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
cache="${1:-$target/dotnet-runtimes}"
versions="${CLRPROF_RUNTIME_VERSIONS:-8.0.33 9.0.22}"
rid=linux-x64
package="Microsoft.NETCore.App.Runtime.$rid"

say() { echo "provision-runtimes: $*" >&2; }
die() { say "$*"; exit 1; }

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) ;;
  *) die "only linux-x64 is provisioned (this is $(uname -s)-$(uname -m))" ;;
esac

if [ -n "${CLRPROF_SYSTEM_DOTNET:-}" ]; then
  system="$CLRPROF_SYSTEM_DOTNET"
else
  muxer="$(command -v dotnet || true)"
  [ -n "$muxer" ] || for m in /usr/share/dotnet/dotnet /usr/lib/dotnet/dotnet "$HOME/.dotnet/dotnet"; do
    if [ -x "$m" ]; then muxer="$m"; break; fi
  done
  [ -n "$muxer" ] || die "the .NET SDK was not found (no dotnet on PATH); install the .NET 10 SDK"
  system="$(dirname "$(readlink -f "$muxer")")"
fi
[ -x "$system/dotnet" ] && [ -d "$system/host/fxr" ] ||
  die "$system is not a .NET install (no dotnet muxer and host/fxr); set CLRPROF_SYSTEM_DOTNET"
[ "$(readlink -f "$system")" != "$(readlink -f "$cache/dotnet")" ] ||
  die "the cache's DOTNET_ROOT is the system install; run with the system dotnet on PATH"

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

root="$cache/dotnet"
frameworks="$root/shared/Microsoft.NETCore.App"
mkdir -p "$frameworks"

# The muxer: a copy, refreshed when the system's changes.
if ! cmp -s "$system/dotnet" "$root/dotnet"; then
  cp "$system/dotnet" "$root/dotnet.tmp.$$"
  mv -f "$root/dotnet.tmp.$$" "$root/dotnet"
fi
for part in host sdk packs sdk-manifests templates; do
  if [ -e "$system/$part" ]; then ln -sfn "$system/$part" "$root/$part"; fi
done
# The system's own runtimes stay usable through this root (10 for the default tests).
for dir in "$system"/shared/*/*/; do
  dir="${dir%/}"
  name="$(basename "$(dirname "$dir")")"
  version="$(basename "$dir")"
  mkdir -p "$root/shared/$name"
  if [ ! -e "$root/shared/$name/$version" ] || [ -L "$root/shared/$name/$version" ]; then
    ln -sfn "$dir" "$root/shared/$name/$version"
  fi
done

for version in $versions; do
  dest="$frameworks/$version"
  if [ -f "$dest/.complete" ] || { [ -L "$dest" ] && [ -f "$dest/libcoreclr.so" ]; }; then
    continue
  fi
  say "downloading $package $version from NuGet"
  work="$cache/restore-$version"
  rm -rf "$work" "$dest"
  mkdir -p "$work"
  cat >"$work/provision.csproj" <<PROJ
<Project Sdk="Microsoft.NET.Sdk">
  <PropertyGroup>
    <TargetFramework>netstandard2.0</TargetFramework>
    <DisableImplicitFrameworkReferences>true</DisableImplicitFrameworkReferences>
  </PropertyGroup>
  <ItemGroup>
    <PackageDownload Include="$package" Version="[$version]" />
  </ItemGroup>
</Project>
PROJ
  # No Directory.Build.props from above the cache may leak into this project.
  echo '<Project />' >"$work/Directory.Build.props"
  echo '<Project />' >"$work/Directory.Build.targets"
  if ! DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1 \
      "$system/dotnet" restore "$work/provision.csproj" --packages "$cache/packages" \
      -nologo -p:NuGetAudit=false >"$work/restore.log" 2>&1; then
    sed 's/^/  | /' "$work/restore.log" | tail -15 >&2
    die "could not download $package $version (is the NuGet feed reachable? see $work/restore.log).
  The .NET $version runtime is needed by the tests that run on every supported runtime.
  Run this script once while online, or set CLRPROF_RUNTIME_VERSIONS to versions already in $cache."
  fi
  pkg="$cache/packages/$(echo "$package" | tr '[:upper:]' '[:lower:]')/$version/runtimes/$rid"
  [ -f "$pkg/native/libcoreclr.so" ] || die "$package $version has no runtimes/$rid/native/libcoreclr.so"
  mkdir -p "$dest.tmp"
  cp "$pkg"/lib/net*/* "$dest.tmp/"
  cp "$pkg"/native/* "$dest.tmp/"
  touch "$dest.tmp/.complete"
  mv "$dest.tmp" "$dest"
  rm -rf "$work" "$cache/packages"
  say "installed .NET $version in $dest"
done

echo "$root"
