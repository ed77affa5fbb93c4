# cmake -DINPUT=file -DOUTPUT=file.inc [-DAPPEND_NUL=ON] -P EmbedFile.cmake
# Writes the bytes of INPUT as a C initializer list ("0x2f,0x2f,...").
file(READ "${INPUT}" hex HEX)
if(APPEND_NUL)
  string(APPEND hex "00")
endif()
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# Break the lines every 16 bytes (CMake regexes have no {n}).
string(REPEAT "0x..," 16 line)
string(REGEX REPLACE "(${line})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp" "${bytes}\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
