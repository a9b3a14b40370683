# Directory that the evaluation subprocess puts first on sys.path so that `import nki`,
# `import nki.language as nl` and `import neuronxcc.nki` resolve to the emulator. This __init__ only
# exists so that packaging ships the folder; nothing imports it as a package.
