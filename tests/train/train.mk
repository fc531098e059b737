# tests/train/: tools/train/train.py runs a few steps, deterministically,
# and syshax-convert takes what it writes (CI does not retrain the shipped
# models: docs/model-train.md). SKIP (77) without python3-torch.
.PHONY: check-train
check-train: $(B)/syshax-convert
	@timeout 600 tests/train/train.sh $(B)/syshax-convert || \
		{ rc=$$?; [ $$rc -eq 77 ] || exit $$rc; }

CHECKS	+= check-train
