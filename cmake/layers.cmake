# The layers of swarm/ (adr/0026): each folder is an OBJECT library that
# compiles against a tree of its own (in the build folder) holding links to
# its folder, the folders it may use, and kv/. An include of a folder it may
# not use (one that runs back up) finds no such file, and the build stops:
#   swarm/slots/join.cc: fatal error: swarm/landing/landing.h: No such file or directory
# Headers are always included by their path from the top ("swarm/base/x.h").

# The include tree of `target` (folder `folder`, allowed to use USES).
function(swarm_layer_includes target folder)
  cmake_parse_arguments(L "" "" "USES" ${ARGN})
  set(tree ${PROJECT_BINARY_DIR}/layers/${target})
  file(REMOVE_RECURSE ${tree})
  file(MAKE_DIRECTORY ${tree}/swarm)
  if(NOT folder STREQUAL "kv")
    foreach(used IN LISTS L_USES ITEMS ${folder})
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/swarm/${used} ${tree}/swarm/${used} SYMBOLIC)
    endforeach()
  endif()
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/kv ${tree}/kv SYMBOLIC)
  target_include_directories(${target} PRIVATE ${tree})
endfunction()

# swarm_layer(NAME FOLDER USES folder... SOURCES file...): the layer's library.
function(swarm_layer name folder)
  cmake_parse_arguments(L "" "" "USES;SOURCES" ${ARGN})
  add_library(${name} OBJECT ${L_SOURCES})
  swarm_layer_includes(${name} ${folder} USES ${L_USES})
  target_compile_options(${name} PRIVATE ${SWARM_WARNINGS})
  # Only what brings no include of swarm's: kv/ comes by the tree.
  target_link_libraries(${name} PRIVATE PkgConfig::NATS PkgConfig::CJSON Threads::Threads)
endfunction()

# swarm_cli_layer(NAME FOLDER USES cli-folder... SOURCES file...): a library
# of cli/ (adr/0056): its tree holds swarm/ whole, kv/, its own folder of
# cli/ and the cli/ folders it may use, nothing of another front end's.
function(swarm_cli_layer name folder)
  cmake_parse_arguments(L "" "" "USES;SOURCES" ${ARGN})
  add_library(${name} OBJECT ${L_SOURCES})
  set(tree ${PROJECT_BINARY_DIR}/layers/${name})
  file(REMOVE_RECURSE ${tree})
  file(MAKE_DIRECTORY ${tree}/cli)
  foreach(used IN LISTS L_USES ITEMS ${folder})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/cli/${used} ${tree}/cli/${used} SYMBOLIC)
  endforeach()
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/swarm ${tree}/swarm SYMBOLIC)
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/kv ${tree}/kv SYMBOLIC)
  target_include_directories(${name} PRIVATE ${tree})
  target_compile_options(${name} PRIVATE ${SWARM_WARNINGS})
  target_link_libraries(${name} PRIVATE PkgConfig::NATS PkgConfig::CJSON Threads::Threads)
endfunction()
