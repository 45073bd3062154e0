#!/usr/bin/env python3
"""Turn xrxe's --help pages into man pages, so the two cannot drift.

Every help page of the project (`xrxe --help`, `xrxe help CMD`, `xrxed --help`,
`xrxe-impair --help`, and man/xrxe.7.txt, written in the same layout) is a
plain-text manual: section headings at column 0 in capitals, text indented by
4 spaces, option lines ("-x, --long ARG") followed by their description
indented further, examples and tables indented more. This converts that
layout to man(7) troff:

    mkman.py NAME SECTION [--date DATE] [--version V] < page.txt > NAME.SECTION
    mkman.py NAME SECTION --sub TITLE PAGE.txt ... < main.txt

--sub appends another page (a subcommand's) as a subsection titled TITLE,
its headings demoted to bold lines. The output uses only .TH .SH .SS .PP .TP
.IP .nf/.fi and \\fB, so groff -man -ww renders it without a warning.
"""
import re
import sys

HEADING = re.compile(r"^[A-Z][A-Z /-]*$")
# Sections whose lines are laid out by hand: never filled.
VERBATIM = ("SYNOPSIS", "EXAMPLES")
# An option line at the page's text indent: "-x, --long ARG", "--long ARG",
# "-x ARG"; or an entry of a two-column list ("0  success", "XRXE_LOG  ...").
OPTION = re.compile(r"^-{1,2}[A-Za-z0-9]")
# A term of a definition list: SIGTERM, XRXE_LOG, "SIGINT, SIGTERM".
TERM = re.compile(r"^[A-Z][A-Z0-9_]*(, [A-Z][A-Z0-9_]*)*$")


def esc(text):
    """Escape for troff: backslashes, dashes, and a leading . or '."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    if text.startswith((".", "'")):
        text = "\\&" + text
    return text


def indent_of(line):
    return len(line) - len(line.lstrip(" "))


def convert_body(lines, out, sub=False):
    """lines: the page's lines. Writes troff to the list out."""
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i].rstrip("\n").rstrip()
        if not line:
            i += 1
            continue
        if indent_of(line) == 0 and HEADING.match(line):
            out.append(('.PP\n\\fB%s\\fR' if sub else '.SH "%s"') % esc(line))
            i += 1
            if line in VERBATIM:
                # kept as laid out, to the next heading
                block = []
                while i < n and not (indent_of(lines[i]) == 0 and lines[i].strip()):
                    block.append(lines[i].rstrip())
                    i += 1
                while block and not block[-1]:
                    block.pop()
                out.append(".nf")
                out.extend(esc(b[4:]) if b else "" for b in block)
                out.append(".fi")
            continue
        ind = indent_of(line)
        text = line.strip()
        if ind <= 4 and (OPTION.match(text) or TERM.match(text)) and i + 1 < n and indent_of(lines[i + 1]) > ind \
                and lines[i + 1].strip():
            # an option and its description (indented deeper, until a line
            # back at this indent or a blank line followed by one)
            out.append(".TP")
            out.append("\\fB%s\\fR" % esc(text))
            i += 1
            desc = []
            while i < n and lines[i].strip() and indent_of(lines[i]) > ind:
                desc.append(lines[i].rstrip("\n"))
                i += 1
            convert_block(desc, out)
            continue
        if ind <= 4:
            # a paragraph: consecutive lines at this indent, filled
            para = []
            while i < n and lines[i].strip() and indent_of(lines[i]) == ind \
                    and not (indent_of(lines[i]) == 0 and HEADING.match(lines[i].rstrip())):
                para.append(lines[i].strip())
                i += 1
            # a paragraph whose lines are a table (two spaces between columns)
            # keeps its layout
            if any(re.search(r"\S {2,}\S", p) for p in para) or len(para) > 1 and \
                    all(len(p) < 40 for p in para):
                out.append(".PP\n.nf")
                out.extend(esc(p) for p in para)
                out.append(".fi")
            else:
                out.append(".PP")
                out.extend(esc(p) for p in para)
            continue
        # deeper: preformatted until a blank line or a line at <= 4
        block = []
        while i < n and lines[i].strip() and indent_of(lines[i]) > 4:
            block.append(lines[i].rstrip("\n"))
            i += 1
        base = min(indent_of(b) for b in block)
        out.append(".PP\n.RS 4\n.nf")
        out.extend(esc(b[base:]) for b in block)
        out.append(".fi\n.RE")


def convert_block(desc, out):
    """An option's description: filled unless it has a layout of its own."""
    if not desc:
        return
    base = min(indent_of(d) for d in desc)
    if all(indent_of(d) == base for d in desc) and \
            not any(re.search(r"\S {2,}\S", d.strip()) for d in desc):
        out.extend(esc(d.strip()) for d in desc)
    else:
        out.append(".nf")
        out.extend(esc(d[base:]) for d in desc)
        out.append(".fi")


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    name, section = argv[1], argv[2]
    date, version, subs = "", "", []
    args = argv[3:]
    while args:
        a = args.pop(0)
        if a == "--date":
            date = args.pop(0)
        elif a == "--version":
            version = args.pop(0)
        elif a == "--sub":
            subs.append((args.pop(0), args.pop(0)))
        else:
            sys.exit("mkman.py: unknown argument %s" % a)
    out = ['.\\" Generated by scripts/mkman.py from the --help text; do not edit.',
           '.TH "%s" "%s" "%s" "xrxe %s" "xrxe"' % (esc(name.upper()), section, date, version)]
    convert_body(sys.stdin.read().split("\n"), out)
    if subs:
        out.append('.SH "COMMANDS IN DETAIL"')
    for title, path in subs:
        out.append('.SS "%s"' % esc(title))
        with open(path) as f:
            convert_body(f.read().split("\n"), out, sub=True)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main(sys.argv)
