package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

// apply creates the objects of a manifest of the kinds lockstep's install needs (namespaces,
// ServiceAccounts, RBAC), as kubectl apply would on a fresh cluster.
func apply(ctx context.Context, c kubernetes.Interface, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		o := metav1.CreateOptions{}
		switch x := obj.(type) {
		case *corev1.Namespace:
			_, err = c.CoreV1().Namespaces().Create(ctx, x, o)
		case *corev1.ServiceAccount:
			_, err = c.CoreV1().ServiceAccounts(x.Namespace).Create(ctx, x, o)
		case *rbacv1.ClusterRole:
			_, err = c.RbacV1().ClusterRoles().Create(ctx, x, o)
		case *rbacv1.ClusterRoleBinding:
			_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, x, o)
		case *rbacv1.Role:
			_, err = c.RbacV1().Roles(x.Namespace).Create(ctx, x, o)
		case *rbacv1.RoleBinding:
			_, err = c.RbacV1().RoleBindings(x.Namespace).Create(ctx, x, o)
		default:
			return fmt.Errorf("%s: %T is not a kind the tests install", path, obj)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
}
