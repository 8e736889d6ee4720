from sweeper.cli import console

console()
