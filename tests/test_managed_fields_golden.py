"""``metadata.managedFields`` exactly as recorded: a golden scenario of the writes a cluster makes
(create, bind, kubelet status updates, merge patches of the object and of its status, server-side
apply with a conflict and forced applies, a status update, an edit), so that any change to how the
API server tracks field ownership that alters a byte is caught."""

from __future__ import annotations

import json

import orjson

from k8semu.api import errors
from k8semu.api.apiserver import APIServer, RequestContext
from k8semu.store import EventLog

# managedFields after each step of scenario(), as recorded (create, bind, three kubelet status updates, merge patches of the object and of status,
# server-side apply, a conflicting apply, forced applies, a status update, an edit).
EXPECTED = json.loads(r"""
[
 [
  {
   "manager": "kube-controller-manager",
   "operation": "Update",
   "apiVersion": "v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      ".": {},
      "f:app": {}
     }
    },
    "f:spec": {
     "f:containers": {
      "k:{\"name\":\"main\"}": {
       ".": {},
       "f:image": {},
       "f:imagePullPolicy": {},
       "f:name": {},
       "f:ports": {
        ".": {},
        "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {
         ".": {},
         "f:containerPort": {},
         "f:protocol": {}
        }
       },
       "f:resources": {
        ".": {},
        "f:requests": {
         ".": {},
         "f:cpu": {}
        }
       },
       "f:terminationMessagePath": {},
       "f:terminationMessagePolicy": {},
       "f:volumeMounts": {
        ".": {},
        "k:{\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}": {
         ".": {},
         "f:mountPath": {},
         "f:name": {},
         "f:readOnly": {}
        }
       }
      }
     },
     "f:dnsPolicy": {},
     "f:enableServiceLinks": {},
     "f:preemptionPolicy": {},
     "f:priority": {},
     "f:restartPolicy": {},
     "f:schedulerName": {},
     "f:securityContext": {},
     "f:serviceAccount": {},
     "f:serviceAccountName": {},
     "f:terminationGracePeriodSeconds": {},
     "f:tolerations": {},
     "f:volumes": {
      ".": {},
      "k:{\"name\":\"kube-api-access-tt8lw\"}": {
       ".": {},
       "f:name": {},
       "f:projected": {
        ".": {},
        "f:defaultMode": {},
        "f:sources": {}
       }
      }
     }
    }
   }
  }
 ],
 [
  {
   "manager": "kube-controller-manager",
   "operation": "Update",
   "apiVersion": "v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      ".": {},
      "f:app": {}
     }
    },
    "f:spec": {
     "f:containers": {
      "k:{\"name\":\"main\"}": {
       ".": {},
       "f:image": {},
       "f:imagePullPolicy": {},
       "f:name": {},
       "f:ports": {
        ".": {},
        "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {
         ".": {},
         "f:containerPort": {},
         "f:protocol": {}
        }
       },
       "f:resources": {
        ".": {},
        "f:requests": {
         ".": {},
         "f:cpu": {}
        }
       },
       "f:terminationMessagePath": {},
       "f:terminationMessagePolicy": {},
       "f:volumeMounts": {
        ".": {},
        "k:{\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}": {
         ".": {},
         "f:mountPath": {},
         "f:name": {},
         "f:readOnly": {}
        }
       }
      }
     },
     "f:dnsPolicy": {},
     "f:enableServiceLinks": {},
     "f:preemptionPolicy": {},
     "f:priority": {},
     "f:restartPolicy": {},
     "f:schedulerName": {},
     "f:securityContext": {},
     "f:serviceAccount": {},
     "f:serviceAccountName": {},
     "f:terminationGracePeriodSeconds": {},
     "f:tolerations": {},
     "f:volumes": {
      ".": {},
      "k:{\"name\":\"kube-api-access-tt8lw\"}": {
       ".": {},
       "f:name": {},
       "f:projected": {
        ".": {},
        "f:defaultMode": {},
        "f:sources": {}
       }
      }
     }
    }
   }
  },
  {
   "manager": "kubelet",
   "operation": "Update",
   "apiVersion": "v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:status": {
     "f:conditions": {
      "k:{\"type\":\"Initialized\"}": {
       ".": {},
       "f:lastProbeTime": {},
       "f:lastTransitionTime": {},
       "f:status": {},
       "f:type": {}
      },
      "k:{\"type\":\"Ready\"}": {
       ".": {},
       "f:lastProbeTime": {},
       "f:lastTransitionTime": {},
       "f:status": {},
       "f:type": {}
      }
     },
     "f:containerStatuses": {},
     "f:hostIP": {},
     "f:hostIPs": {
      ".": {},
      "k:{\"ip\":\"172.18.0.3\"}": {
       ".": {},
       "f:ip": {}
      }
     },
     "f:startTime": {}
    }
   },
   "subresource": "status"
  }
 ],
 [
  {
   "manager": "kube-controller-manager",
   "operation": "Update",
   "apiVersion": "v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      ".": {},
      "f:app": {}
     }
    },
    "f:spec": {
     "f:containers": {
      "k:{\"name\":\"main\"}": {
       ".": {},
       "f:image": {},
       "f:imagePullPolicy": {},
       "f:name": {},
       "f:ports": {
        ".": {},
        "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {
         ".": {},
         "f:containerPort": {},
         "f:protocol": {}
        }
       },
       "f:resources": {
        ".": {},
        "f:requests": {
         ".": {},
         "f:cpu": {}
        }
       },
       "f:terminationMessagePath": {},
       "f:terminationMessagePolicy": {},
       "f:volumeMounts": {
        ".": {},
        "k:{\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}": {
         ".": {},
         "f:mountPath": {},
         "f:name": {},
         "f:readOnly": {}
        }
       }
      }
     },
     "f:dnsPolicy": {},
     "f:enableServiceLinks": {},
     "f:preemptionPolicy": {},
     "f:priority": {},
     "f:restartPolicy": {},
     "f:schedulerName": {},
     "f:securityContext": {},
     "f:serviceAccount": {},
     "f:serviceAccountName": {},
     "f:terminationGracePeriodSeconds": {},
     "f:tolerations": {},
     "f:volumes": {
      ".": {},
      "k:{\"name\":\"kube-api-access-tt8lw\"}": {
       ".": {},
       "f:name": {},
       "f:projected": {
        ".": {},
        "f:defaultMode": {},
        "f:sources": {}
       }
      }
     }
    }
   }
  },
  {
   "manager": "kubelet",
   "operation": "Update",
   "apiVersion": "v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:status": {
     "f:conditions": {
      "k:{\"type\":\"ContainersReady\"}": {
       ".": {},
       "f:lastProbeTime": {},
       "f:lastTransitionTime": {},
       "f:status": {},
       "f:type": {}
      },
      "k:{\"type\":\"Initialized\"}": {
       ".": {},
       "f:lastProbeTime": {},
       "f:lastTransitionTime": {},
       "f:status": {},
       "f:type": {}
      },
      "k:{\"type\":\"PodReadyToStartContainers\"}": {
       ".": {},
       "f:lastProbeTime": {},
       "f:lastTransitionTime": {},
       "f:status": {},
       "f:type": {}
      },
      "k:{\"type\":\"Ready\"}": {
       ".": {},
       "f:lastProbeTime": {},
       "f:lastTransitionTime": {},
       "f:status": {},
       "f:type": {}
      }
     },
     "f:containerStatuses": {},
     "f:hostIP": {},
     "f:hostIPs": {
      ".": {},
      "k:{\"ip\":\"172.18.0.3\"}": {
       ".": {},
       "f:ip": {}
      }
     },
     "f:phase": {},
     "f:podIP": {},
     "f:podIPs": {
      ".": {},
      "k:{\"ip\":\"10.244.1.5\"}": {
       ".": {},
       "f:ip": {}
      }
     },
     "f:startTime": {}
    }
   },
   "subresource": "status"
  }
 ],
 [
  {
   "manager": "kube-controller-manager",
   "operation": "Update",
   "apiVersion": "v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      ".": {},
      "f:app": {}
     }
    },
    "f:spec": {
     "f:containers": {
      "k:{\"name\":\"main\"}": {
       ".": {},
       "f:image": {},
       "f:imagePullPolicy": {},
       "f:name": {},
       "f:ports": {
        ".": {},
        "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {
         ".": {},
         "f:containerPort": {},
         "f:protocol": {}
        }
       },
       "f:resources": {
        ".": {},
        "f:requests": {
         ".": {},
         "f:cpu": {}
        }
       },
       "f:terminationMessagePath": {},
       "f:terminationMessagePolicy": {},
       "f:volumeMounts": {
        ".": {},
        "k:{\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}": {
         ".": {},
         "f:mountPath": {},
         "f:name": {},
         "f:readOnly": {}
        }
       }
      }
     },
     "f:dnsPolicy": {},
     "f:enableServiceLinks": {},
     "f:preemptionPolicy": {},
     "f:priority": {},
     "f:restartPolicy": {},
     "f:schedulerName": {},
     "f:securityContext": {},
     "f:serviceAccount": {},
     "f:serviceAccountName": {},
     "f:terminationGracePeriodSeconds": {},
     "f:tolerations": {},
     "f:volumes": {
      ".": {},
      "k:{\"name\":\"kube-api-access-tt8lw\"}": {
       ".": {},
       "f:name": {},
       "f:projected": {
        ".": {},
        "f:defaultMode": {},
        "f:sources": {}
       }
      }
     }
    }
   }
  },
  {
   "manager": "kubelet",
   "operation": "Update",
   "apiVersion": "v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:status": {
     "f:conditions": {
      "k:{\"type\":\"Initialized\"}": {
       ".": {},
       "f:lastProbeTime": {},
       "f:lastTransitionTime": {},
       "f:status": {},
       "f:type": {}
      },
      "k:{\"type\":\"Ready\"}": {
       ".": {},
       "f:lastProbeTime": {},
       "f:lastTransitionTime": {},
       "f:status": {},
       "f:type": {}
      }
     },
     "f:containerStatuses": {},
     "f:hostIP": {},
     "f:phase": {},
     "f:startTime": {}
    }
   },
   "subresource": "status"
  }
 ],
 [
  {
   "manager": "kube-controller-manager",
   "operation": "Update",
   "apiVersion": "v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {}
    },
    "f:spec": {
     "f:containers": {
      "k:{\"name\":\"main\"}": {
       ".": {},
       "f:image": {},
       "f:imagePullPolicy": {},
       "f:name": {},
       "f:ports": {
        ".": {},
        "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {
         ".": {},
         "f:containerPort": {},
         "f:protocol": {}
        }
       },
       "f:resources": {
        ".": {},
        "f:requests": {
         ".": {},
         "f:cpu": {}
        }
       },
       "f:terminationMessagePath": {},
       "f:terminationMessagePolicy": {},
       "f:volumeMounts": {
        ".": {},
        "k:{\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}": {
         ".": {},
         "f:mountPath": {},
         "f:name": {},
         "f:readOnly": {}
        }
       }
      }
     },
     "f:dnsPolicy": {},
     "f:enableServiceLinks": {},
     "f:preemptionPolicy": {},
     "f:priority": {},
     "f:restartPolicy": {},
     "f:schedulerName": {},
     "f:securityContext": {},
     "f:serviceAccount": {},
     "f:serviceAccountName": {},
     "f:terminationGracePeriodSeconds": {},
     "f:tolerations": {},
     "f:volumes": {
      ".": {},
      "k:{\"name\":\"kube-api-access-tt8lw\"}": {
       ".": {},
       "f:name": {},
       "f:projected": {
        ".": {},
        "f:defaultMode": {},
        "f:sources": {}
       }
      }
     }
    }
   }
  },
  {
   "manager": "kubectl-label",
   "operation": "Update",
   "apiVersion": "v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      "f:tier": {}
     }
    }
   }
  },
  {
   "manager": "kubelet",
   "operation": "Update",
   "apiVersion": "v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:status": {
     "f:conditions": {
      "k:{\"type\":\"Initialized\"}": {
       ".": {},
       "f:lastProbeTime": {},
       "f:lastTransitionTime": {},
       "f:status": {},
       "f:type": {}
      },
      "k:{\"type\":\"Ready\"}": {
       ".": {},
       "f:lastProbeTime": {},
       "f:lastTransitionTime": {},
       "f:status": {},
       "f:type": {}
      }
     },
     "f:containerStatuses": {},
     "f:hostIP": {},
     "f:phase": {},
     "f:startTime": {}
    }
   },
   "subresource": "status"
  }
 ],
 [
  {
   "manager": "kube-controller-manager",
   "operation": "Update",
   "apiVersion": "v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {}
    },
    "f:spec": {
     "f:containers": {
      "k:{\"name\":\"main\"}": {
       ".": {},
       "f:image": {},
       "f:imagePullPolicy": {},
       "f:name": {},
       "f:ports": {
        ".": {},
        "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {
         ".": {},
         "f:containerPort": {},
         "f:protocol": {}
        }
       },
       "f:resources": {
        ".": {},
        "f:requests": {
         ".": {},
         "f:cpu": {}
        }
       },
       "f:terminationMessagePath": {},
       "f:terminationMessagePolicy": {},
       "f:volumeMounts": {
        ".": {},
        "k:{\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}": {
         ".": {},
         "f:mountPath": {},
         "f:name": {},
         "f:readOnly": {}
        }
       }
      }
     },
     "f:dnsPolicy": {},
     "f:enableServiceLinks": {},
     "f:preemptionPolicy": {},
     "f:priority": {},
     "f:restartPolicy": {},
     "f:schedulerName": {},
     "f:securityContext": {},
     "f:serviceAccount": {},
     "f:serviceAccountName": {},
     "f:terminationGracePeriodSeconds": {},
     "f:tolerations": {},
     "f:volumes": {
      ".": {},
      "k:{\"name\":\"kube-api-access-tt8lw\"}": {
       ".": {},
       "f:name": {},
       "f:projected": {
        ".": {},
        "f:defaultMode": {},
        "f:sources": {}
       }
      }
     }
    }
   }
  },
  {
   "manager": "kubectl-label",
   "operation": "Update",
   "apiVersion": "v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      "f:tier": {}
     }
    }
   }
  },
  {
   "manager": "kubelet",
   "operation": "Update",
   "apiVersion": "v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:status": {
     "f:conditions": {
      "k:{\"type\":\"Initialized\"}": {
       ".": {},
       "f:lastProbeTime": {},
       "f:lastTransitionTime": {},
       "f:status": {},
       "f:type": {}
      },
      "k:{\"type\":\"Ready\"}": {
       ".": {},
       "f:lastProbeTime": {},
       "f:lastTransitionTime": {},
       "f:status": {},
       "f:type": {}
      }
     },
     "f:containerStatuses": {},
     "f:hostIP": {},
     "f:startTime": {}
    }
   },
   "subresource": "status"
  },
  {
   "manager": "tester",
   "operation": "Update",
   "apiVersion": "v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:status": {
     "f:phase": {}
    }
   },
   "subresource": "status"
  }
 ],
 [
  {
   "manager": "alice",
   "operation": "Apply",
   "apiVersion": "apps/v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      "f:app": {}
     }
    },
    "f:spec": {
     "f:replicas": {},
     "f:selector": {},
     "f:template": {
      "f:metadata": {
       "f:labels": {
        "f:app": {}
       }
      },
      "f:spec": {
       "f:containers": {
        "k:{\"name\":\"nginx\"}": {
         ".": {},
         "f:env": {
          "k:{\"name\":\"A\"}": {
           ".": {},
           "f:name": {},
           "f:value": {}
          }
         },
         "f:image": {},
         "f:name": {}
        }
       }
      }
     }
    }
   }
  }
 ],
 [
  {
   "manager": "alice",
   "operation": "Apply",
   "apiVersion": "apps/v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      "f:app": {}
     }
    },
    "f:spec": {
     "f:selector": {},
     "f:template": {
      "f:metadata": {
       "f:labels": {
        "f:app": {}
       }
      },
      "f:spec": {
       "f:containers": {
        "k:{\"name\":\"nginx\"}": {
         ".": {},
         "f:env": {
          "k:{\"name\":\"A\"}": {
           ".": {},
           "f:name": {},
           "f:value": {}
          }
         },
         "f:image": {},
         "f:name": {}
        }
       }
      }
     }
    }
   }
  },
  {
   "manager": "kubectl-scale",
   "operation": "Update",
   "apiVersion": "apps/v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:spec": {
     "f:replicas": {}
    }
   }
  }
 ],
 "Apply failed with 1 conflict: conflict with \"kubectl-scale\" using apps/v1: .spec.replicas",
 [
  {
   "manager": "alice",
   "operation": "Apply",
   "apiVersion": "apps/v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      "f:app": {}
     }
    },
    "f:spec": {
     "f:selector": {},
     "f:template": {
      "f:metadata": {
       "f:labels": {
        "f:app": {}
       }
      },
      "f:spec": {
       "f:containers": {
        "k:{\"name\":\"nginx\"}": {
         ".": {},
         "f:env": {
          "k:{\"name\":\"A\"}": {
           ".": {},
           "f:name": {},
           "f:value": {}
          }
         },
         "f:image": {},
         "f:name": {}
        }
       }
      }
     }
    }
   }
  },
  {
   "manager": "bob",
   "operation": "Apply",
   "apiVersion": "apps/v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      "f:app": {}
     }
    },
    "f:spec": {
     "f:replicas": {},
     "f:selector": {},
     "f:template": {
      "f:metadata": {
       "f:labels": {
        "f:app": {}
       }
      },
      "f:spec": {
       "f:containers": {
        "k:{\"name\":\"nginx\"}": {
         ".": {},
         "f:env": {
          "k:{\"name\":\"A\"}": {
           ".": {},
           "f:name": {},
           "f:value": {}
          }
         },
         "f:image": {},
         "f:name": {}
        }
       }
      }
     }
    }
   }
  }
 ],
 [
  {
   "manager": "alice",
   "operation": "Apply",
   "apiVersion": "apps/v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      "f:app": {}
     }
    },
    "f:spec": {
     "f:selector": {},
     "f:template": {
      "f:metadata": {
       "f:labels": {
        "f:app": {}
       }
      },
      "f:spec": {
       "f:containers": {
        "k:{\"name\":\"nginx\"}": {
         ".": {},
         "f:image": {},
         "f:name": {}
        }
       }
      }
     }
    }
   }
  },
  {
   "manager": "bob",
   "operation": "Apply",
   "apiVersion": "apps/v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      "f:app": {}
     }
    },
    "f:spec": {
     "f:replicas": {},
     "f:selector": {},
     "f:template": {
      "f:metadata": {
       "f:labels": {
        "f:app": {}
       }
      },
      "f:spec": {
       "f:containers": {
        "k:{\"name\":\"nginx\"}": {
         ".": {},
         "f:env": {
          "k:{\"name\":\"A\"}": {
           ".": {},
           "f:name": {},
           "f:value": {}
          }
         },
         "f:name": {}
        }
       }
      }
     }
    }
   }
  }
 ],
 [
  {
   "manager": "alice",
   "operation": "Apply",
   "apiVersion": "apps/v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      "f:app": {}
     }
    },
    "f:spec": {
     "f:selector": {},
     "f:template": {
      "f:metadata": {
       "f:labels": {
        "f:app": {}
       }
      },
      "f:spec": {
       "f:containers": {
        "k:{\"name\":\"nginx\"}": {
         ".": {},
         "f:image": {},
         "f:name": {}
        }
       }
      }
     }
    }
   }
  },
  {
   "manager": "bob",
   "operation": "Apply",
   "apiVersion": "apps/v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      "f:app": {}
     }
    },
    "f:spec": {
     "f:replicas": {},
     "f:selector": {},
     "f:template": {
      "f:metadata": {
       "f:labels": {
        "f:app": {}
       }
      },
      "f:spec": {
       "f:containers": {
        "k:{\"name\":\"nginx\"}": {
         ".": {},
         "f:env": {
          "k:{\"name\":\"A\"}": {
           ".": {},
           "f:name": {},
           "f:value": {}
          }
         },
         "f:name": {}
        }
       }
      }
     }
    }
   }
  },
  {
   "manager": "kube-controller-manager",
   "operation": "Update",
   "apiVersion": "apps/v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:status": {
     "f:readyReplicas": {},
     "f:replicas": {}
    }
   },
   "subresource": "status"
  }
 ],
 [
  {
   "manager": "alice",
   "operation": "Apply",
   "apiVersion": "apps/v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      "f:app": {}
     }
    },
    "f:spec": {
     "f:selector": {},
     "f:template": {
      "f:metadata": {
       "f:labels": {
        "f:app": {}
       }
      },
      "f:spec": {
       "f:containers": {
        "k:{\"name\":\"nginx\"}": {
         ".": {},
         "f:image": {},
         "f:name": {}
        }
       }
      }
     }
    }
   }
  },
  {
   "manager": "bob",
   "operation": "Apply",
   "apiVersion": "apps/v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:labels": {
      "f:app": {}
     }
    },
    "f:spec": {
     "f:replicas": {},
     "f:selector": {},
     "f:template": {
      "f:metadata": {
       "f:labels": {
        "f:app": {}
       }
      },
      "f:spec": {
       "f:containers": {
        "k:{\"name\":\"nginx\"}": {
         ".": {},
         "f:env": {
          "k:{\"name\":\"A\"}": {
           ".": {},
           "f:name": {},
           "f:value": {}
          }
         },
         "f:name": {}
        }
       }
      }
     }
    }
   }
  },
  {
   "manager": "kube-controller-manager",
   "operation": "Update",
   "apiVersion": "apps/v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:status": {
     "f:readyReplicas": {},
     "f:replicas": {}
    }
   },
   "subresource": "status"
  },
  {
   "manager": "kubectl-edit",
   "operation": "Update",
   "apiVersion": "apps/v1",
   "time": "2025-01-01T00:00:00Z",
   "fieldsType": "FieldsV1",
   "fieldsV1": {
    "f:metadata": {
     "f:annotations": {
      ".": {},
      "f:x": {}
     }
    }
   }
  }
 ]
]
""")


def scenario() -> list:
    """Writes of every kind; returns each step's managedFields."""
    s = APIServer(EventLog(), authorize=False)
    s.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    rs = RequestContext(actor="replicaset-controller")
    kubelet = RequestContext(actor="kubelet/node-1")
    steps = []
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}},
           "spec": {"containers": [{"name": "main", "image": "pause:3.10",
                                    "ports": [{"containerPort": 8080}],
                                    "resources": {"requests": {"cpu": "10m"}}}]}}
    steps.append(s.create("pods", pod, namespace="default", ctx=rs))
    s.bind("p", {"target": {"name": "node-1"}}, namespace="default", ctx=RequestContext(actor="kube-scheduler"))
    cond = lambda t, st, ts: {"type": t, "status": st, "lastProbeTime": None, "lastTransitionTime": ts}
    statuses = [
        {"phase": "Pending", "conditions": [cond("PodScheduled", "True", "2025-01-01T00:00:00Z"), cond("Initialized", "True", "2025-01-01T00:00:00Z"),
                                            cond("Ready", "False", "2025-01-01T00:00:00Z")],
         "hostIP": "172.18.0.3", "hostIPs": [{"ip": "172.18.0.3"}], "startTime": "2025-01-01T00:00:00Z",
         "containerStatuses": [{"name": "main", "ready": False, "state": {"waiting": {"reason": "ContainerCreating"}}}]},
        {"phase": "Running", "conditions": [cond("PodScheduled", "True", "2025-01-01T00:00:00Z"), cond("Initialized", "True", "2025-01-01T00:00:00Z"),
                                            cond("PodReadyToStartContainers", "True", "2025-01-01T00:00:05Z"),
                                            cond("Ready", "True", "2025-01-01T00:00:05Z"), cond("ContainersReady", "True", "2025-01-01T00:00:05Z")],
         "hostIP": "172.18.0.3", "hostIPs": [{"ip": "172.18.0.3"}], "podIP": "10.244.1.5",
         "podIPs": [{"ip": "10.244.1.5"}], "startTime": "2025-01-01T00:00:00Z",
         "containerStatuses": [{"name": "main", "ready": True, "state": {"running": {"startedAt": "2025-01-01T00:00:05Z"}}}]},
        {"phase": "Running", "conditions": [cond("PodScheduled", "True", "2025-01-01T00:00:00Z"), cond("Initialized", "True", "2025-01-01T00:00:00Z"),
                                            cond("Ready", "True", "2025-01-01T00:00:05Z")],
         "hostIP": "172.18.0.3", "startTime": "2025-01-01T00:00:00Z",
         "containerStatuses": [{"name": "main", "ready": True, "state": {"running": {"startedAt": "2025-01-01T00:00:05Z"}}}]},
    ]
    for st in statuses:
        cur = s.get("pods", "p", namespace="default")
        steps.append(s.update("pods", {**cur, "status": st}, namespace="default", subresource="status", ctx=kubelet))
    steps.append(s.patch("pods", "p", {"metadata": {"labels": {"tier": "a", "app": None}}},
                         "application/merge-patch+json", namespace="default", field_manager="kubectl-label"))
    steps.append(s.patch("pods", "p", {"status": {"phase": "Failed"}}, "application/merge-patch+json",
                         namespace="default", subresource="status", field_manager="tester"))
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25",
                                                          "env": [{"name": "A", "value": "1"}]}]}}}}
    ap = "application/apply-patch+yaml"
    steps.append(s.patch("deployments", "web", dep, ap, namespace="default", field_manager="alice"))
    steps.append(s.patch("deployments", "web", {"spec": {"replicas": 3}}, "application/merge-patch+json",
                         namespace="default", field_manager="kubectl-scale"))
    bob = {**dep, "spec": {**dep["spec"], "replicas": 5}}
    try:
        s.patch("deployments", "web", bob, ap, namespace="default", field_manager="bob")
        steps.append({"metadata": {"managedFields": "no conflict?"}})
    except errors.Conflict as e:
        steps.append({"metadata": {"managedFields": str(e)}})
    steps.append(s.patch("deployments", "web", bob, ap, namespace="default", field_manager="bob", force=True))
    dep2 = {**dep, "spec": {**dep["spec"], "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}}
    del dep2["spec"]["replicas"]
    steps.append(s.patch("deployments", "web", dep2, ap, namespace="default", field_manager="alice", force=True))
    cur = s.get("deployments", "web", namespace="default")
    steps.append(s.update("deployments", {**cur, "status": {"replicas": 5, "readyReplicas": 1}},
                          namespace="default", subresource="status", ctx=RequestContext(actor="deployment-controller")))
    cur = s.get("deployments", "web", namespace="default")
    steps.append(s.update("deployments", {**cur, "metadata": {**cur["metadata"], "annotations": {"x": "y"}}},
                          namespace="default", field_manager="kubectl-edit"))
    return [st["metadata"].get("managedFields") for st in steps]


def test_managed_fields_byte_identical_to_expected():
    got = scenario()
    assert len(got) == len(EXPECTED)
    for i, (g, want) in enumerate(zip(got, EXPECTED)):
        assert orjson.dumps(g) == orjson.dumps(want), f"step {i}"
