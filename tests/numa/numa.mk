# tests/numa/: the CPU engine over every NUMA node (placement, one node vs
# all). Runs in the VM guests (two nodes, four); on a one-node host it says
# SKIP.
NUMA_SPLIT := $(B)/tests/numa/numa_split

$(B)/tests/numa/numa_split.o: CPPFLAGS_tests += -I$(CURDIR)/tools/lib

# Static libsyshax-rt: the same binary runs in the guest.
$(NUMA_SPLIT): $(B)/tests/numa/numa_split.o $(SHXTOOLS_A) $(SHRT_A) \
		$(B)/libshxk.a
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs cunit numa) \
		-lm -pthread

.PHONY: check-numa-split
check-numa-split: $(NUMA_SPLIT) $(B)/syshaxd
	timeout 300 $(NUMA_SPLIT); s=$$?; [ $$s -eq 0 ] || [ $$s -eq 77 ]

ALL	+= $(NUMA_SPLIT)
CHECKS	+= check-numa-split
VM_BINS	+= $(NUMA_SPLIT)
