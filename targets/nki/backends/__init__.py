"""NKI backends, one module each: emulator (default), simulate (real nki.simulate), neuron (Trainium)."""
