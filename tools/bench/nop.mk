# tools/bench/nop.c: syshax-bench nop talks to a backend through the
# library (static: the bench also runs in the VM guest).
CPPFLAGS_tools += -I$(CURDIR)/runtime/include -I$(CURDIR)/tools
$(B)/syshax-bench: $(SHRT_A)
VM_FILES += $(B)/syshax-bench
