# Doxygen INPUT_FILTER for the public headers: turns their indented `///` examples into \code
# blocks. The headers indent examples by three spaces under the prose (readable in an editor),
# which Markdown does not take as code, so Doxygen would run the lines together. A run of `///`
# lines indented by three or more spaces (empty `///` lines inside it included) is an example
# when the line before it is an empty `///` or ends with ':'; bullet continuations (after
# "- ...") stay prose. The filter only rewrites the
# lines around a run, never adds or removes one, so warnings keep the headers' line numbers.
function is_blank(s) { return s ~ /^[ \t]*\/\/\/[ \t]*$/ }
function is_indented(s) { return s ~ /^[ \t]*\/\/\/   +[^ ]/ }
function is_comment(s) { return s ~ /^[ \t]*\/\/\/([^\/<]|$)/ }
{ line[NR] = $0 }
END {
  i = 1
  while (i <= NR) {
    if (!(is_indented(line[i]) && i > 1 && (is_blank(line[i - 1]) || line[i - 1] ~ /:[ \t]*$/) &&
          is_comment(line[i - 1]))) {
      i++
      continue
    }
    line[i - 1] = line[i - 1] " \\code"
    j = i
    # An empty `///` between indented lines stays inside the example.
    while (j + 1 <= NR && (is_indented(line[j + 1]) || (is_blank(line[j + 1]) && is_indented(line[j + 2])))) j++
    after = j + 1
    if (after <= NR && is_comment(line[after])) sub(/\/\/\//, "/// \\endcode", line[after])
    else line[j] = line[j] " \\endcode"
    i = after + 1
  }
  for (k = 1; k <= NR; k++) print line[k]
}
