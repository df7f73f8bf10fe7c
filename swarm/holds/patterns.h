// A hold's patterns: git pathspec globs from the repository's root
// (`src/api/**`, `README.md`, `docs/*.md`). What a pattern matches, and
// whether two patterns may match a common path: decided from their literal
// parts, conservatively (adr/0041): two patterns may be called overlapping
// when no path matches both, never the other way round.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace swarm {

// A pattern a hold may name: relative, '/'-separated, no empty, `.` or `..`
// segment, no control character, at most 1,024 bytes; exit 2 naming it.
void require_hold_pattern(std::string_view pattern);

// Whether `path` (a file's path from the root) is matched: segment by
// segment (`*`, `?` and `[...]` within one segment; `**` any number of
// segments), or a leading folder of it is (`src/api` holds what is in it).
bool pattern_matches(std::string_view pattern, std::string_view path);

// Whether some path may be matched by both (true when in doubt).
bool patterns_overlap(std::string_view a, std::string_view b);

// Whether `pattern` matches every path (all its segments `*` or `**`: `**`,
// `*`, `**/*`): a hold of the whole tree, which would stand in every other
// slot's way (`swarm hold` takes one only with --force).
bool covers_whole_tree(std::string_view pattern);

// Whether any pattern of `a` overlaps any of `b`.
bool any_overlap(const std::vector<std::string>& a, const std::vector<std::string>& b);

}  // namespace swarm
