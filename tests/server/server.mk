# tests/server/: syshax-serve end to end over HTTP on 127.0.0.1, against
# private syshaxds, compared with syshax-run (serve_test.py says what).
.PHONY: check-syshax-serve
check-syshax-serve: $(B)/syshax-serve $(B)/syshax-run $(B)/syshaxd
	timeout 600 python3 -u tests/server/serve_test.py $(B)/syshax-serve \
		$(B)/syshax-run $(B)/syshaxd

CHECKS	+= check-syshax-serve
