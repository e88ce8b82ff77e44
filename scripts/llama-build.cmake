# How ralph-tui compiles the pinned llama.cpp, beyond the options its CMake offers. Included
# into llama.cpp's CMake project by CMAKE_PROJECT_INCLUDE (.cargo/config.toml for the crate's
# build, scripts/build-llama-server.sh for llama-server's, so both trees compile the same
# objects and the server's build can reuse the crate's). The crate's build script does not
# watch this file: after changing it, `cargo clean -p llama-cpp-sys-2`.
#
# - The model graphs (src/models/*.cpp, one small file per architecture) compile as unity
#   batches of 16, as llama.cpp itself does from a later release on; everything else file by
#   file. Two pairs of model files define the same file-local helper; one file of each pair
#   stays out of the batches.
# - The `common` library and cpp-httplib compile at -O1: ralph-tui calls only common's thin
#   wrappers around llama's sampler functions, so nothing there is on a hot path, and at -O1
#   llama-common takes 30 % less CPU time than at -O3. ggml and llama keep the build type's
#   flags.

get_property(done GLOBAL PROPERTY RALPH_LLAMA_BUILD)
if(NOT done AND EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/src/models")
  set_property(GLOBAL PROPERTY RALPH_LLAMA_BUILD ON)
  function(ralph_llama_build)
    if(NOT TARGET llama)
      return()
    endif()
    set(src "${CMAKE_CURRENT_SOURCE_DIR}/src")
    get_target_property(sources llama SOURCES)
    set(apart "")
    foreach(file IN LISTS sources)
      # Paths relative to src/ (the target's own directory), made absolute for the call below.
      cmake_path(ABSOLUTE_PATH file BASE_DIRECTORY "${src}" NORMALIZE)
      if(NOT file MATCHES "/models/[^/]+\\.cpp$"
         OR file MATCHES "/models/(gemma4|qwen3next)\\.cpp$")
        list(APPEND apart "${file}")
      endif()
    endforeach()
    set_target_properties(llama PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
    set_source_files_properties(${apart} DIRECTORY "${src}"
      PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    # After the build type's -O3 on the command line, so this one counts.
    foreach(helper IN ITEMS llama-common cpp-httplib)
      if(TARGET ${helper})
        target_compile_options(${helper} PRIVATE -O1)
      endif()
    endforeach()
  endfunction()
  cmake_language(DEFER CALL ralph_llama_build)
endif()
