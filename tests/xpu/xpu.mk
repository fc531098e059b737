# tests/xpu/: the PyTorch xPU worker (python3 -m syshax.xpu, CPU torch) as
# syshax-run's xPU side on the trained models (run.sh says what it
# checks); SKIP (77) without torch, as check-python. tests/gpu/run.sh is
# the same worker on an NVIDIA GPU, by hand (CI has none); its --dry-run
# (every check with the worker on the CPU) runs here.
.PHONY: check-xpu
check-xpu: $(PY_STAMP) $(B)/syshaxd $(B)/syshax-run $(B)/syshax-serve \
		$(B)/syshax-top \
		$(B)/models/kjv-llama-f32.gguf $(B)/models/kjv-qwen3moe-f32.gguf
	@timeout 300 tests/xpu/run.sh $(B) $(PYTHON) || { rc=$$?; [ $$rc -eq 77 ] || exit $$rc; }
	@PYTHON=$(PYTHON) timeout 300 tests/gpu/run.sh --dry-run $(B) || { rc=$$?; [ $$rc -eq 77 ] || exit $$rc; }
	shellcheck tests/xpu/run.sh tests/gpu/run.sh

ifneq ($(NO_PYTHON),1)
ifneq ($(SAN),1)
CHECKS	+= check-xpu
endif
endif
