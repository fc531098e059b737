# broker/: rules shared by the module and syshaxd (headers only).
CPPFLAGS_daemon  += -I$(CURDIR)/broker
CPPFLAGS_runtime += -I$(CURDIR)/broker
CPPFLAGS_tests   += -I$(CURDIR)/broker
