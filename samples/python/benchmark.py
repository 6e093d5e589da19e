"""d2l's Benchmark for the chapter's listings: times the body of a with block and prints it."""
import time


class Benchmark:
    def __init__(self, description="Done"):
        self.description = description

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *args):
        self.seconds = time.perf_counter() - self.start
        print(f"{self.description}: {self.seconds:.4f} sec")
