#!/bin/sh
# tools/man.sh SLIMRUN - help2man's --include file for slimrun's man page:
# a COMMANDS section with every command's --help (the same text as
# `slimrun COMMAND --help` and docs/cli.md), then ENVIRONMENT and
# SEE ALSO. tools/local.mk runs help2man with it (when configure found it).
slimrun=${1:?usage: man.sh SLIMRUN}
# roff-safe: backslashes doubled, a leading . or ' escaped
roff() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"; }
cat <<'END'
[DESCRIPTION]
.B slimrun
trains, evaluates and runs image classifiers with TF\-Slim's flags:
models are YAML files (a zoo of TF\-Slim's nets ships with it), datasets
TFRecord shards (\fBslimrun convert\fR writes them from image folders),
checkpoints resume where a run stopped. The commands and their flags follow.
END
echo "[COMMANDS]"
cmds=$("$slimrun" --help | sed -n 's/^  \([a-z][a-z_]*\)  .*/\1/p')
for c in $cmds; do
    echo ".SS \"slimrun $c\""
    echo ".nf"
    "$slimrun" "$c" --help 2>&1 | roff
    echo ".fi"
done
cat <<'END'
[ENVIRONMENT]
.TP
.B NO_COLOR
when set (and not empty), no colour: errors, warnings and the progress
line's figures are coloured only on a terminal, and never with NO_COLOR.
.TP
.B SLIM_MODEL_PATH
directories searched for model files before the zoo.
[SEE ALSO]
README.md (the manual) in the source tree; \fBgnuplot\fR(1) draws \fBslimrun plot\fR's pictures.
END
