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

# swarm_layer(NAME FOLDER USES folder... INTERNAL header... SOURCES file...):
# the layer's library. INTERNAL names the folder's headers that only swarm/
# may include: the trees of cli/ (swarm_cli_layer) hold no link to them.
function(swarm_layer name folder)
  cmake_parse_arguments(L "" "" "USES;INTERNAL;SOURCES" ${ARGN})
  add_library(${name} OBJECT ${L_SOURCES})
  foreach(header IN LISTS L_INTERNAL)
    if(NOT EXISTS ${PROJECT_SOURCE_DIR}/swarm/${folder}/${header})
      message(FATAL_ERROR "${name}: INTERNAL ${header} is not a file of swarm/${folder}")
    endif()
    set_property(GLOBAL APPEND PROPERTY SWARM_INTERNAL_HEADERS swarm/${folder}/${header})
  endforeach()
  swarm_layer_includes(${name} ${folder} USES ${L_USES})
  target_compile_options(${name} PRIVATE ${SWARM_WARNINGS})
  # Only what brings no include of swarm's: kv/ comes by the tree.
  target_link_libraries(${name} PRIVATE PkgConfig::NATS PkgConfig::CJSON Threads::Threads)
endfunction()

# The headers of swarm/ a tree of cli/ holds: each one a link of its own,
# those a swarm_layer called INTERNAL left out, so an include of one finds
# no such file. A header added later is linked when the build next looks
# (CONFIGURE_DEPENDS). Called after every swarm_layer.
function(swarm_public_headers tree)
  get_property(internal GLOBAL PROPERTY SWARM_INTERNAL_HEADERS)
  # For tests/layers: the headers every tree of cli/ must not find.
  list(JOIN internal "\n" lines)
  file(WRITE ${PROJECT_BINARY_DIR}/layers/internal-headers.txt "${lines}\n")
  file(GLOB headers CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/swarm/*/*.h)
  foreach(header IN LISTS headers)
    if(header IN_LIST internal)
      continue()
    endif()
    get_filename_component(dir ${tree}/${header} DIRECTORY)
    file(MAKE_DIRECTORY ${dir})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${header} ${tree}/${header} SYMBOLIC)
  endforeach()
endfunction()

# swarm_cli_includes(TARGET FOLDER USES cli-folder...): the include tree of a
# target of cli/ (adr/0056): swarm/'s headers but its internals
# (swarm_public_headers), kv/, its own folder of cli/ and the cli/ folders
# it may use, nothing of another front end's.
function(swarm_cli_includes name folder)
  cmake_parse_arguments(L "" "" "USES" ${ARGN})
  set(tree ${PROJECT_BINARY_DIR}/layers/${name})
  file(REMOVE_RECURSE ${tree})
  file(MAKE_DIRECTORY ${tree}/cli)
  foreach(used IN LISTS L_USES ITEMS ${folder})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/cli/${used} ${tree}/cli/${used} SYMBOLIC)
  endforeach()
  swarm_public_headers(${tree})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/kv ${tree}/kv SYMBOLIC)
  target_include_directories(${name} PRIVATE ${tree})
endfunction()

# swarm_cli_layer(NAME FOLDER USES cli-folder... SOURCES file...): a library
# of cli/ over the tree swarm_cli_includes makes.
function(swarm_cli_layer name folder)
  cmake_parse_arguments(L "" "" "USES;SOURCES" ${ARGN})
  add_library(${name} OBJECT ${L_SOURCES})
  swarm_cli_includes(${name} ${folder} USES ${L_USES})
  target_compile_options(${name} PRIVATE ${SWARM_WARNINGS})
  target_link_libraries(${name} PRIVATE PkgConfig::NATS PkgConfig::CJSON Threads::Threads)
endfunction()
