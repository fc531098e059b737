# daemon/model/: the weights-file parsers (tfile.h: GGUF, safetensors),
# linked into syshaxd and into tests/unit/model_parse_ut. safetensors.c
# parses its JSON header with Debian's cJSON (libcjson-dev).
SHXD_MODEL_OBJS := $(addprefix $(B)/daemon/model/,tfile.o gguf.o safetensors.o)
SHXD_MODEL_LIBS := $(shell $(PKG_CONFIG) --libs libcjson)
CPPFLAGS_daemon += $(shell $(PKG_CONFIG) --cflags libcjson)
