# Writes OUT: the pages of docs/ (each DOC file's text, HTML comments
# dropped) as the help topics `swarm help TOPIC` prints offline. Run at
# build time (cmake -P) whenever a page changes.
#   cmake -DOUT=help_topics.h -DDOCS="a.md;b.md" -P embed_docs.cmake
set(body "// Generated from docs/*.md by cmake/embed_docs.cmake: do not edit.\n#pragma once\n\nnamespace cli {\n\nstruct HelpTopic {\n  const char* name;\n  const char* text;\n};\n\ninline constexpr HelpTopic kHelpTopics[] = {\n")
foreach(doc IN LISTS DOCS)
  get_filename_component(name "${doc}" NAME_WE)
  file(READ "${doc}" text)
  string(REGEX REPLACE "<!--[^\n]*-->\n" "" text "${text}")
  string(FIND "${text}" ")swarmdoc\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${doc} holds the raw string's delimiter")
  endif()
  string(APPEND body "    {\"${name}\", R\"swarmdoc(${text})swarmdoc\"},\n")
endforeach()
string(APPEND body "};\n\n}  // namespace cli\n")
file(WRITE "${OUT}.tmp" "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
