# models/: the toy models trained on the King James Bible (tools/train/,
# docs/model-train.md), shipped as F16 safetensors folders; every GGUF type
# is derived from them here by syshax-convert, byte for byte the same on
# every build -> $(B)/models/kjv-{llama,qwen3moe}-{f32,f16,q8_0,q4_0}.gguf,
# with the held-out ids beside them (tests/llama, syshax-run --perplexity).
TRAINED_MODELS := kjv-llama kjv-qwen3moe
TRAINED_TYPES := f32 f16 q8_0 q4_0
TRAINED_GGUF := $(foreach m,$(TRAINED_MODELS),\
	$(foreach t,$(TRAINED_TYPES),$(B)/models/$(m)-$(t).gguf))

define trained_rule
$(B)/models/$(1)-%.gguf: $(addprefix models/$(1)/,model.safetensors \
		config.json tokenizer.json) $(B)/syshax-convert
	@mkdir -p $$(@D)
	$(B)/syshax-convert --type $$* --name $(1) models/$(1) $$@
endef
$(foreach m,$(TRAINED_MODELS),$(eval $(call trained_rule,$(m))))

$(B)/models/heldout.ids: models/heldout.ids
	install -D -m 0644 $< $@

TRAINED_FILES := $(TRAINED_GGUF) $(B)/models/heldout.ids
ALL += $(TRAINED_FILES)
