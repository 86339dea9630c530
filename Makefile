# Convenience wrappers; every target goes through scripts/setup.sh.
.PHONY: all images test check-fast lint setup clean

all: images

images:
	sh scripts/main.sh

# The whole suite, as the README says.
test:
	sh scripts/test.sh

# The quick tier (under a minute on two cores): tests/conftest.py FAST_MODULES.
check-fast:
	sh scripts/test.sh -m fast

# pyflakes, type hints on the typed packages' public functions, mypy (mypy.ini).
lint: setup
	sh scripts/lint.sh

setup:
	sh scripts/setup.sh

clean:
	rm -rf out .pytest_cache .mypy_cache
