#!/usr/bin/env bash
# Render a deck (and any other .pptx) to PDF with LibreOffice headless, then one PNG per slide
# with pdftoppm, to look at before calling a deck done.  Not part of `make test`.
#
#   scripts/render_deck.sh [DECK.pptx] [OUT_DIR]
#
# Default deck: outputs/latest's deck.pptx; default OUT_DIR: <deck folder>/deck_png.
# Needs: soffice (Debian: apt-get install -y libreoffice-impress) and pdftoppm (poppler-utils).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deck="${1:-}"
if [[ -z "$deck" ]]; then
  latest="$root/outputs/latest"
  [[ -f "$latest" ]] || { echo "error: no deck given and no $latest" >&2; exit 2; }
  deck="$root/outputs/$(tr -d '\n' < "$latest")/deck.pptx"
fi
[[ -f "$deck" ]] || { echo "error: $deck: no such file (run: wallcast deck)" >&2; exit 2; }
out="${2:-$(dirname "$deck")/deck_png}"
mkdir -p "$out"

for tool in soffice pdftoppm; do
  command -v "$tool" >/dev/null || {
    echo "error: $tool not found (apt-get install -y libreoffice-impress poppler-utils)" >&2
    exit 2
  }
done

# A private LibreOffice profile: no clash with a running instance, no first-start dialogs.
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
soffice -env:UserInstallation="file://$profile" --headless --convert-to pdf --outdir "$out" "$deck" >/dev/null
pdf="$out/$(basename "${deck%.*}").pdf"
[[ -f "$pdf" ]] || { echo "error: LibreOffice did not write $pdf" >&2; exit 1; }
pdftoppm -png -r "${DPI:-80}" "$pdf" "$out/slide"
ls "$out"/slide*.png
