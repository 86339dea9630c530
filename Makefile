# Convenience wrappers; every target goes through scripts/setup.sh.
.PHONY: all images test setup clean

all: images

images:
	sh scripts/main.sh

test:
	sh scripts/test.sh

setup:
	sh scripts/setup.sh

clean:
	rm -rf out .pytest_cache
