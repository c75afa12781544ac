"""k8semu.sim"""
