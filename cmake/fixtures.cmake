# Unpacks the xz-compressed test fixtures into the build tree at configure time.
find_program(CUA_S1_XZ xz)
if(NOT CUA_S1_XZ)
  message(FATAL_ERROR
    "xz not found: it is needed to unpack tests/fixtures/tokenizer/*.xz (apt-get install xz-utils)")
endif()

# Decompresses `source` to `destination` if the destination is missing or older.
function(cua_s1_unxz source destination)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${source})
  if(NOT EXISTS ${source})
    message(FATAL_ERROR "fixture ${source} is missing")
  endif()
  if(NOT EXISTS ${destination} OR ${source} IS_NEWER_THAN ${destination})
    get_filename_component(destination_dir ${destination} DIRECTORY)
    file(MAKE_DIRECTORY ${destination_dir})
    execute_process(COMMAND ${CUA_S1_XZ} -dc ${source}
      OUTPUT_FILE ${destination}.tmp RESULT_VARIABLE xz_result ERROR_VARIABLE xz_error)
    if(NOT xz_result EQUAL 0)
      file(REMOVE ${destination}.tmp)
      message(FATAL_ERROR "xz -dc ${source} failed (${xz_result}): ${xz_error}")
    endif()
    file(RENAME ${destination}.tmp ${destination})
  endif()
endfunction()

set(CUA_S1_TOKENIZER_FIXTURES ${CMAKE_SOURCE_DIR}/tests/fixtures/tokenizer)
cua_s1_unxz(${CUA_S1_TOKENIZER_FIXTURES}/qwen35-tokenizer.json.xz
  ${CMAKE_BINARY_DIR}/fixtures/qwen35/tokenizer.json)
cua_s1_unxz(${CUA_S1_TOKENIZER_FIXTURES}/corpus.jsonl.xz
  ${CMAKE_BINARY_DIR}/fixtures/qwen35/corpus.jsonl)
