# tools/syshax-demo: the first program to run (scripts/demo runs it).
CPPFLAGS_tools += -I$(CURDIR)/runtime/include

# Static library: the demo also runs in the VM guest.
$(B)/syshax-demo: $(B)/tools/syshax-demo.o $(SHRT_A)
	$(CC) $(LDFLAGS) -o $@ $< $(SHRT_A) $(shell $(PKG_CONFIG) --libs numa) \
		-pthread

ALL	 += $(B)/syshax-demo
VM_FILES += $(B)/syshax-demo
INSTALLS += install-syshax-demo

.PHONY: install-syshax-demo
install-syshax-demo: $(B)/syshax-demo
	install -D -m 0755 $(B)/syshax-demo $(DESTDIR)$(PREFIX)/bin/syshax-demo

# In the guest: the demo and the NOP bench against the module.
VM_BINS += tools/vm-tools.sh
# In the memoryless guest: the CPU engine with a CPU on a node without
# memory.
VM_MEMORYLESS_BINS += tools/vm-memoryless.sh
VM_MEMORYLESS_FILES += $(B)/syshax-run $(B)/syshaxd
