# Turns a file into a C array: cmake -DIN=file -DOUT=out.c -DSYMBOL=name -P embed.cmake
file(READ ${IN} hex HEX)
file(SHA256 ${IN} digest)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE ${OUT} "#include <stddef.h>\nconst char ${SYMBOL}[] = {${body}0x00};\nconst size_t ${SYMBOL}_len = ${len};\nconst char ${SYMBOL}_sha256[] = \"${digest}\";\n")
